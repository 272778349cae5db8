#include "sim/trace/recorder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "sim/errors.h"
#include "sim/run_id.h"

namespace wafersim::sim::trace {

Recorder::Recorder(TraceOptions options, std::filesystem::path dir, units::Frequency clock, std::uint64_t window_cycles)
    : options_(std::move(options)),
      dir_(std::move(dir)),
      clock_(clock),
      period_ps_(1e12 / clock.hz),
      window_(window_cycles) {
  if (window_ == 0) throw InputError("--trace-window: the window must be at least 1 cycle");
  if (options_.max_windows < 2 || options_.max_windows % 2)
    throw InputError(fmt::format("--trace-max-windows {}: expected an even number, at least 2", options_.max_windows));
  if (options_.max_cells == 0) throw InputError("--trace-cells: expected at least 1");
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec || !std::filesystem::is_directory(dir_))
    throw InputError(fmt::format("cannot create the trace folder {}: {}", dir_.string(),
                                 ec ? ec.message() : "exists and is not a folder"));
  if (options_.timeline) timeline_ = std::make_unique<ChromeTrace>(dir_ / "timeline.json", options_.max_events);
  if (options_.vcd) vcd_ = std::make_unique<VcdFile>(dir_ / "routers.vcd");
}

Recorder::~Recorder() = default;

Picos Recorder::time_of(Cycle c) const {
  return Picos(static_cast<std::uint64_t>(std::round(static_cast<double>(c.count()) * period_ps_)));
}

std::uint64_t Recorder::window_at(Picos t) const {
  auto c = static_cast<std::uint64_t>(static_cast<double>(t.count()) / period_ps_);
  while (c > 0 && time_of(Cycle(c)) > t) --c;
  while (time_of(Cycle(c + 1)) <= t) ++c;
  return c / window_;
}

std::uint64_t Recorder::fit(Picos t) {
  std::uint64_t i = window_at(t);
  while (i >= options_.max_windows) {
    merge();
    i = window_at(t);
  }
  return i;
}

WindowTable& Recorder::add_table(const std::string& file, const std::string& name, const std::string& description,
                                 std::vector<WindowTable::Column> keys, std::vector<WindowTable::Column> values) {
  tables_.push_back(std::make_unique<WindowTable>(dir_ / file, name, description, std::move(keys), std::move(values)));
  return *tables_.back();
}

WindowSource& Recorder::add_source() {
  sources_.push_back(std::make_unique<WindowSource>(*this));
  return *sources_.back();
}

void Recorder::merge() {
  for (auto& t : tables_) t->merge_pairs();
  window_ *= 2;
  ++merges_;
  for (auto& s : sources_) {
    s->closed_ /= 2;
    for (WindowProducer* p : s->producers_) p->windows_merged();
  }
  for (WindowProducer* p : free_producers_) p->windows_merged();
}

void WindowSource::close_last(Cycle end) {
  while (closed_ >= recorder_.options_.max_windows) recorder_.merge();
  for (WindowProducer* p : producers_) p->close_window(closed_, sampled_until_, end);
  sampled_until_ = end;
  ++closed_;
}

void WindowSource::close_through(Cycle now) {
  // The first window to close holds everything since the last sample; the ones after it up
  // to `now` saw no tick of this engine, so nothing happened in them.
  const std::uint64_t max = recorder_.options_.max_windows;
  bool first = true;
  while (true) {
    if (closed_ >= max) {
      recorder_.merge();
      continue;
    }
    const std::uint64_t k = recorder_.window_;
    const Cycle end((closed_ + 1) * k);
    if (end > now) return;
    if (first) {
      for (WindowProducer* p : producers_) p->close_window(closed_, sampled_until_, end);
      sampled_until_ = end;
      ++closed_;
      first = false;
      continue;
    }
    const std::uint64_t last = std::min<std::uint64_t>(now.count() / k, max);  // [closed_, last) are empty
    for (WindowProducer* p : producers_) p->skip_windows(closed_, last - closed_);
    closed_ = last;
    sampled_until_ = Cycle(last * k);
  }
}

void WindowSource::before_tick(Cycle now) {
  if (!recorder_.finished_) close_through(now);
}

std::vector<std::string> Recorder::finish(Cycle end) {
  if (finished_) throw std::logic_error("Recorder::finish called twice");
  for (auto& s : sources_) {
    s->close_through(end);
    if (s->sampled_until_ < end) s->close_last(end);
  }
  finished_ = true;
  // Every source closed the same windows; producers without an engine may need more.
  std::uint64_t needed = end.count() == 0 ? 0 : (end.count() - 1) / window_ + 1;
  for (WindowProducer* p : free_producers_) needed = std::max(needed, p->windows_needed());
  while (needed > options_.max_windows) {
    merge();
    needed = (needed + 1) / 2;
  }
  windows_ = needed;
  for (auto& s : sources_)
    for (WindowProducer* p : s->producers_) p->finish(windows_);
  for (WindowProducer* p : free_producers_) p->finish(windows_);

  std::vector<std::string> files;
  nlohmann::ordered_json tables = nlohmann::ordered_json::object();
  for (auto& t : tables_) {
    t->close();
    tables[t->name()] = t->describe();
    files.push_back(t->path().filename().string());
  }
  nlohmann::ordered_json meta;
  meta["format"] = "wafersim-trace/1";
  meta["run_id"] = run_id();
  meta["clock_hz"] = clock_.hz;
  meta["window_cycles"] = window_;
  meta["windows"] = windows_;
  meta["end_cycle"] = end.count();
  meta["window_budget"] = options_.max_windows;
  meta["merges"] = merges_;
  meta["tables"] = std::move(tables);
  if (timeline_) {
    timeline_->close();
    meta["timeline"] = {{"file", "timeline.json"}, {"events", timeline_->events()}, {"dropped", timeline_->dropped()}};
    files.push_back("timeline.json");
  } else {
    meta["timeline"] = nullptr;
  }
  if (vcd_) {
    vcd_->close(end.count() ? time_of(Cycle(end.count() - 1)).count() : 0);
    meta["vcd"] = {{"file", "routers.vcd"}, {"variables", vcd_->variables()}};
    files.push_back("routers.vcd");
  } else {
    meta["vcd"] = nullptr;
  }
  for (auto& [k, v] : meta_.items()) meta[k] = v;
  const std::filesystem::path path = dir_ / "meta.json";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << meta.dump(1) << "\n";
  out.flush();
  if (!out) throw OutputError(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  files.insert(files.begin(), "meta.json");
  return files;
}

}  // namespace wafersim::sim::trace

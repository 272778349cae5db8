#include "fabric/traffic/injection_trace.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "sim/config/input_file.h"
#include "sim/errors.h"

namespace wafersim::fabric::traffic {
namespace {

// The words of a line with the 1-based column each starts at; '#' ends the line.
std::vector<std::pair<std::string, std::size_t>> words(const std::string& line) {
  std::vector<std::pair<std::string, std::size_t>> out;
  std::size_t i = 0;
  while (i < line.size() && line[i] != '#') {
    if (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
      ++i;
      continue;
    }
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' && line[i] != '#') ++i;
    out.emplace_back(line.substr(start, i - start), start + 1);
  }
  return out;
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {
    sim::config::check_input_file(path_, "the injection trace", sim::config::kMaxTableBytes);
    in_.open(path_, std::ios::binary);
    if (!in_) throw sim::InputError(fmt::format("{}: cannot read it: {}", path_, std::strerror(errno)));
  }
  // The next line that has words (empty at the end of the file).
  std::vector<std::pair<std::string, std::size_t>> next() {
    std::string line;
    while (std::getline(in_, line)) {
      ++line_;
      auto w = words(line);
      if (!w.empty()) return w;
    }
    ++line_;
    return {};
  }
  [[noreturn]] void fail(std::size_t column, const std::string& what) const {
    throw sim::InputError(fmt::format("{}:{}:{}: {}", path_, line_, column, what));
  }
  std::uint64_t number(const std::pair<std::string, std::size_t>& w, const char* what, std::uint64_t max) const {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(w.first.data(), w.first.data() + w.first.size(), v);
    if (ec != std::errc() || end != w.first.data() + w.first.size() || v > max)
      fail(w.second, fmt::format("{}: expected a whole number in 0 .. {}, found '{}'", what, max, w.first));
    return v;
  }
  // A header line "KEY VALUE..." with `count` values.
  std::vector<std::pair<std::string, std::size_t>> header(const char* key, std::size_t count) {
    auto w = next();
    if (w.empty() || w[0].first != key || w.size() != count + 1)
      fail(w.empty() ? 1 : w[0].second,
           fmt::format("expected the header line '{}' with {} value{}", key, count, count == 1 ? "" : "s"));
    return w;
  }

 private:
  std::string path_;
  std::ifstream in_;
  std::size_t line_ = 0;
};

}  // namespace

void write_injection_trace(const std::string& path, const InjectionTrace& trace) {
  std::ostringstream out;
  out << InjectionTrace::kFormat << "\n";
  out << fmt::format("mesh {} {}\ncolors {}\nend_cycle {}\n", trace.width, trace.height, trace.colors, trace.end_cycle);
  out << "cycle src_x src_y dst_x dst_y size\n";
  for (const auto& r : trace.records)
    out << fmt::format("{} {} {} {} {} {}\n", r.cycle, r.src.x, r.src.y, r.dst.x, r.dst.y, r.size);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << out.str();
  f.flush();
  if (!f) throw sim::InputError(fmt::format("--capture {}: cannot write it: {}", path, std::strerror(errno)));
}

InjectionTrace read_injection_trace(const std::string& path) {
  Reader in(path);
  InjectionTrace t;
  auto format = in.next();
  if (format.size() != 1 || format[0].first != InjectionTrace::kFormat)
    in.fail(
        format.empty() ? 1 : format[0].second,
        fmt::format("expected the first line '{}' (a file of 'wafersim traffic --capture')", InjectionTrace::kFormat));
  auto mesh = in.header("mesh", 2);
  t.width = static_cast<std::uint32_t>(in.number(mesh[1], "mesh width", 65535));
  t.height = static_cast<std::uint32_t>(in.number(mesh[2], "mesh height", 65535));
  if (t.width == 0) in.fail(mesh[1].second, "mesh width: expected at least 1 PE");
  if (t.height == 0) in.fail(mesh[2].second, "mesh height: expected at least 1 PE");
  t.colors = static_cast<std::uint32_t>(in.number(in.header("colors", 1)[1], "colors", 64));
  t.end_cycle = in.number(in.header("end_cycle", 1)[1], "end_cycle", UINT64_MAX);
  const auto columns = in.next();
  const char* names[] = {"cycle", "src_x", "src_y", "dst_x", "dst_y", "size"};
  bool ok = columns.size() == 6;
  for (std::size_t i = 0; ok && i < 6; ++i) ok = columns[i].first == names[i];
  if (!ok)
    in.fail(columns.empty() ? 1 : columns[0].second, "expected the column line 'cycle src_x src_y dst_x dst_y size'");
  for (auto w = in.next(); !w.empty(); w = in.next()) {
    if (w.size() != 6)
      in.fail(w[0].second, fmt::format("expected 6 numbers (cycle src_x src_y dst_x dst_y size), found {}", w.size()));
    InjectionRecord r;
    r.cycle = in.number(w[0], "cycle", t.end_cycle);
    r.src = hw::PeCoord{static_cast<std::uint16_t>(in.number(w[1], "src_x", t.width - 1)),
                        static_cast<std::uint16_t>(in.number(w[2], "src_y", t.height - 1))};
    r.dst = hw::PeCoord{static_cast<std::uint16_t>(in.number(w[3], "dst_x", t.width - 1)),
                        static_cast<std::uint16_t>(in.number(w[4], "dst_y", t.height - 1))};
    r.size = static_cast<std::uint32_t>(in.number(w[5], "size", 1u << 20));
    if (r.size == 0) in.fail(w[5].second, "size: expected at least 1 wavelet");
    if (!t.records.empty() && r.cycle < t.records.back().cycle)
      in.fail(w[0].second, fmt::format("cycle {} is before the previous record's {}: records are in cycle order",
                                       r.cycle, t.records.back().cycle));
    t.records.push_back(r);
  }
  return t;
}

}  // namespace wafersim::fabric::traffic

#include "sim/trace/link_tracer.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace wafersim::sim::trace {
namespace {
__extension__ typedef unsigned __int128 u128;
}  // namespace

LinkTracer::LinkTracer(Recorder& recorder) : recorder_(recorder), table_(nullptr) {
  if (recorder_.options().windows)
    table_ = &recorder_.add_table(
        "links.csv", "links", "bytes moved and busy time of each chunk link (MemoryX, SwarmX, wafer edges) per window",
        {{"link", "", "index into meta.json links", WindowTable::Merge::Sum}},
        {{"bytes", "B", "bytes moved in the window", WindowTable::Merge::Sum},
         {"busy_ps", "ps", "time the link was serialising in the window", WindowTable::Merge::Sum}});
  recorder_.add_producer(this);
}

void LinkTracer::attach(stream::ChunkOutPort& port, const std::string& group, const std::string& label) {
  if (index_.count(&port)) throw std::logic_error("LinkTracer: link " + port.name() + " attached twice");
  index_.emplace(&port, links_.size());
  Link l;
  l.name = port.name();
  l.group = group;
  l.label = label;
  l.bandwidth = port.bandwidth().bits_per_s;
  if (Timeline* t = recorder_.timeline())
    l.track = t->track(group == "memoryx" ? "MemoryX links" : group == "swarmx" ? "SwarmX links" : "edge links", label);
  links_.push_back(std::move(l));
  port.set_observer(this);
}

void LinkTracer::on_send(const stream::ChunkOutPort& port, const stream::ChunkInfo& chunk, Picos start, Picos end) {
  Link& l = links_[index_.at(&port)];
  l.total += chunk.bytes;
  if (Timeline* t = recorder_.timeline())
    t->slice(l.track, fmt::format("L{} {} #{}", chunk.layer, stream::to_string(chunk.pass), chunk.index), "link", start,
             end,
             {Arg::num("bytes", chunk.bytes), Arg::num("step", chunk.step), Arg::num("layer", chunk.layer),
              Arg::num("chunk", chunk.index), Arg::num("chunks", chunk.count)});
  if (!table_) return;
  const std::uint64_t last = recorder_.fit(end.count() > start.count() ? Picos(end.count() - 1) : start);
  const std::uint64_t first = recorder_.window_at(start);
  if (l.bytes.size() <= last) {
    l.bytes.resize(last + 1, 0);
    l.busy_ps.resize(last + 1, 0);
  }
  const std::uint64_t span = end.count() - start.count();
  if (span == 0) {
    l.bytes[first] += chunk.bytes;
    return;
  }
  // Cumulative floor shares: each window gets floor(bytes * covered / span) minus what the
  // earlier windows got, so the shares sum to the chunk's bytes exactly.
  std::uint64_t given = 0;
  for (std::uint64_t w = first; w <= last; ++w) {
    const std::uint64_t until =
        w == last ? end.count()
                  : std::min<std::uint64_t>(end.count(),
                                            recorder_.time_of(Cycle((w + 1) * recorder_.window_cycles())).count());
    const std::uint64_t from =
        std::max<std::uint64_t>(start.count(), recorder_.time_of(Cycle(w * recorder_.window_cycles())).count());
    const auto covered = static_cast<u128>(until - start.count());
    const auto share = static_cast<std::uint64_t>(covered * chunk.bytes / span);
    l.bytes[w] += share - given;
    given = share;
    l.busy_ps[w] += until > from ? until - from : 0;
  }
}

void LinkTracer::windows_merged() {
  for (Link& l : links_) {
    auto halve = [](std::vector<std::uint64_t>& v) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::uint64_t x = v[i];
        v[i] = 0;
        v[i / 2] += x;
      }
      v.resize((v.size() + 1) / 2);
    };
    halve(l.bytes);
    halve(l.busy_ps);
  }
}

std::uint64_t LinkTracer::windows_needed() const {
  std::uint64_t n = 0;
  for (const Link& l : links_) n = std::max<std::uint64_t>(n, l.bytes.size());
  return n;
}

void LinkTracer::finish(std::uint64_t windows) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Link& l : links_)
    list.push_back(
        {{"name", l.name}, {"group", l.group}, {"label", l.label}, {"bandwidth_bps", l.bandwidth}, {"bytes", l.total}});
  recorder_.meta()["links"] = std::move(list);
  if (!table_) return;
  for (std::uint64_t w = 0; w < windows; ++w)
    for (std::size_t i = 0; i < links_.size(); ++i) {
      const Link& l = links_[i];
      if (w >= l.bytes.size()) continue;
      const std::uint64_t keys[1] = {i};
      const std::uint64_t values[2] = {l.bytes[w], l.busy_ps[w]};
      table_->add(w, keys, values);
    }
}

}  // namespace wafersim::sim::trace

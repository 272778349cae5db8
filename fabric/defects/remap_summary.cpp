#include "fabric/defects/remap_summary.h"

#include <fmt/format.h>

#include <map>
#include <utility>
#include <vector>

#include "fabric/defects/line_shift.h"

namespace wafersim::fabric::defects {
namespace {

// The dead cores of one group of one line, as steps (line_shift.h), and how many lie before
// its first logical core (head) and after its last (tail).
struct Bucket {
  std::uint32_t line = 0, group = 0;
  std::vector<std::uint32_t> steps;
  std::uint32_t head = 0, tail = 0;
};

class Summarizer {
 public:
  Summarizer(const DefectMap& map, const RedundancyConfig& r) : a_(map.array()), r_(r) {
    const std::uint64_t lines = a_.lines(), n = a_.logical_positions();
    out_.dead = map.dead().size();
    out_.links = lines * (n - 1) + n * (lines - 1);
    collect(map);
  }

  RemapSummary run() {
    for (std::size_t i = 0; i < buckets_.size(); ++i) along(i);
    for (std::size_t i = 0; i < buckets_.size(); ++i) across(i);
    return out_;
  }

 private:
  void collect(const DefectMap& map) {
    std::vector<std::uint32_t> dead;
    auto close = [&] {
      Bucket& b = buckets_.back();
      const std::uint32_t n = a_.group_size(b.group);
      b.steps = shift_steps(dead);
      for (std::uint32_t s : b.steps) {
        b.head += s == 0 ? 1u : 0u;
        b.tail += s >= n ? 1u : 0u;
      }
      if (dead.size() > a_.spares())
        fail(fmt::format("{} {}, {}s {} .. {} (group {}): {} dead core{} and {} spare {}{}", line_name(), b.line,
                         position_name(), a_.group_logical_start(b.group), a_.group_logical_start(b.group) + n - 1,
                         b.group, dead.size(), dead.size() == 1 ? "" : "s", a_.spares(), position_name(),
                         a_.spares() == 1 ? "" : "s"));
      index_[{b.group, b.line}] = buckets_.size() - 1;
      dead.clear();
    };
    for (std::uint64_t idx : map.dead()) {
      const auto line = static_cast<std::uint32_t>(idx / a_.positions());
      const auto pos = static_cast<std::uint32_t>(idx % a_.positions());
      const std::uint32_t g = a_.group_of(pos);
      if (buckets_.empty() || buckets_.back().line != line || buckets_.back().group != g) {
        if (!buckets_.empty()) close();
        buckets_.push_back(Bucket{line, g, {}, 0, 0});
      }
      dead.push_back(pos - a_.group_start(g));
    }
    if (!buckets_.empty()) close();
  }

  void link(std::uint32_t extra) {
    if (!extra) return;
    out_.extra_hops += extra;
    ++out_.detour_links;
    out_.worst_extra = std::max(out_.worst_extra, extra);
  }

  // Links along the line: inside the group (between logical cores i-1 and i, the dead cores
  // of step i) and across its ends to the neighbouring groups (tail of one, head of the next).
  void along(std::size_t i) {
    const Bucket& b = buckets_[i];
    const std::uint32_t n = a_.group_size(b.group);
    for (std::size_t j = 0; j < b.steps.size();) {
      std::size_t k = j;
      while (k < b.steps.size() && b.steps[k] == b.steps[j]) ++k;
      if (b.steps[j] >= 1 && b.steps[j] < n) link(static_cast<std::uint32_t>(k - j));
      j = k;
    }
    const Bucket* next = find(b.group + 1, b.line);
    const Bucket* prev = b.group ? find(b.group - 1, b.line) : nullptr;
    if (b.tail && b.group + 1 < a_.groups()) link(b.tail + (next ? next->head : 0));
    if (b.head && b.group > 0 && !(prev && prev->tail)) link(b.head);
  }

  // Links across the lines: with the next line (always) and the previous one (when it has no
  // dead cores in this group, else its own bucket counts the pair).
  void across(std::size_t i) {
    const Bucket& b = buckets_[i];
    static const std::vector<std::uint32_t> none;
    if (b.line + 1 < a_.lines()) {
      const Bucket* o = find(b.group, b.line + 1);
      pair(b, b.steps, o ? o->steps : none, b.line + 1);
    }
    if (b.line > 0 && !find(b.group, b.line - 1)) pair(b, none, b.steps, b.line - 1);
  }

  void pair(const Bucket& b, const std::vector<std::uint32_t>& x, const std::vector<std::uint32_t>& y,
            std::uint32_t other) {
    const Offsets o = line_offsets(x, y, a_.group_size(b.group));
    out_.extra_hops += o.sum;
    out_.detour_links += o.nonzero;
    out_.worst_extra = std::max(out_.worst_extra, o.max);
    if (r_.max_offset && o.max > r_.max_offset)
      fail(
          fmt::format("{}s {} and {}, group {}: logical neighbours {} {}s apart, beyond the bypass links' reach "
                      "(redundancy.max_offset = {})",
                      line_name(), std::min(b.line, other), std::max(b.line, other), b.group, o.max, position_name(),
                      r_.max_offset));
  }

  const Bucket* find(std::uint32_t group, std::uint32_t line) const {
    const auto it = index_.find({group, line});
    return it == index_.end() ? nullptr : &buckets_[it->second];
  }
  void fail(std::string why) {
    if (!out_.ok) return;
    out_.ok = false;
    out_.failure = std::move(why);
  }
  [[nodiscard]] const char* line_name() const { return a_.rows() ? "column" : "row"; }
  [[nodiscard]] const char* position_name() const { return a_.rows() ? "row" : "column"; }

  const PhysicalArray& a_;
  const RedundancyConfig& r_;
  RemapSummary out_;
  std::vector<Bucket> buckets_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::size_t> index_;  // (group, line) -> bucket
};

}  // namespace

RemapSummary summarize(const DefectMap& map, const RedundancyConfig& redundancy) {
  return Summarizer(map, redundancy).run();
}

}  // namespace wafersim::fabric::defects

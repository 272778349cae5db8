#pragma once
// The dead cores of one physical array: sampled from a defect density with a seed, or taken
// from an explicit list. A dead link is absorbed by retiring one of its two cores, the later in
// line order (with spare rows the one below or to the east), so that the remap bypasses it.

#include <cstdint>
#include <vector>

#include "fabric/defects/defect_config.h"
#include "fabric/defects/physical_array.h"

namespace wafersim::fabric::defects {

class DefectMap {
 public:
  explicit DefectMap(const PhysicalArray& array) : array_(array) {}

  // Each core dead independently with probability `p`, from a stream of (seed, stream): the
  // same map for the same arguments on every machine.
  static DefectMap sample(const PhysicalArray& array, double p, std::uint64_t seed, std::uint64_t stream);
  // The config's list, or its density sampled for wafer `wafer` (stream = wafer).
  static DefectMap from_config(const PhysicalArray& array, const DefectConfig& config, std::uint32_t wafer);

  void kill(std::uint32_t x, std::uint32_t y);
  void kill_link(const DeadLink& link);

  [[nodiscard]] const PhysicalArray& array() const { return array_; }
  // Dead cores by index (PhysicalArray::index), increasing.
  [[nodiscard]] const std::vector<std::uint64_t>& dead() const { return dead_; }
  [[nodiscard]] bool is_dead(std::uint32_t line, std::uint32_t position) const;

 private:
  PhysicalArray array_;
  std::vector<std::uint64_t> dead_;
};

// An independent stream `stream` of SplitMix64 under `seed` (as fabric::traffic's sources).
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream);

}  // namespace wafersim::fabric::defects

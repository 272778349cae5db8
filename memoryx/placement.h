#pragma once
// Where MemoryX keeps each layer's weights and optimizer state: DRAM first, spilling whole
// layers to flash, with a DRAM staging area for flash-resident weights on their way out.

#include <cstdint>
#include <string>
#include <vector>

#include "memoryx/memoryx_config.h"
#include "memoryx/optimizer.h"

namespace wafersim::memoryx {

// MemoryX's view of one layer: a name for messages and its parameter count.
struct LayerSpec {
  std::string name;
  std::uint64_t params = 0;
};

enum class Tier { Dram, Flash };
const char* to_string(Tier t);

struct LayerPlacement {
  Tier tier = Tier::Dram;
  std::uint64_t offset = 0;  // byte address of the layer's region inside its tier
  std::uint64_t bytes = 0;   // params x bytes_per_param, rounded up to the tier's page size
};

struct Placement {
  std::vector<LayerPlacement> layers;
  std::uint64_t staging_bytes = 0;  // DRAM reserved for staging flash-resident weights
  std::uint64_t staging_slot_bytes = 0;
  std::uint32_t staging_slots = 0;
  std::uint64_t dram_used = 0;  // layer regions + staging
  std::uint64_t flash_used = 0;
  [[nodiscard]] std::uint32_t flash_layers() const;
};

// Rounds `bytes` up to whole pages of `page_bytes`.
std::uint64_t round_up(std::uint64_t bytes, std::uint64_t page_bytes);

// Places `layers` in order: a layer goes to DRAM when its whole region fits there, else to
// flash. When any layer may spill, (prefetch_depth + 1) staging slots, each the largest
// layer's FP32 weights rounded up to flash pages, are reserved in DRAM first.
// Throws sim::InputError (exit code 2) naming the first layer that fits in neither tier, its
// bytes and the free bytes of each tier; also when bytes_per_param cannot hold the FP32
// weight, gradient and the optimizer's moments.
Placement place(const std::vector<LayerSpec>& layers, const MemoryXConfig& config, OptimizerKind optimizer);

}  // namespace wafersim::memoryx

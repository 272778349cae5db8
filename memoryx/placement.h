#pragma once
// Where MemoryX keeps each layer's weights and optimizer state: DRAM first, spilling whole
// layers to flash, with a DRAM staging area for flash-resident weights on their way out.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "memoryx/memoryx_config.h"
#include "memoryx/optimizer.h"

namespace wafersim::memoryx {

// MemoryX's view of one layer: a name for messages and its parameter count; a sparse layer
// also the parameters it keeps (streamed with their index; the others stay zero).
struct LayerSpec {
  LayerSpec() = default;
  LayerSpec(std::string name_, std::uint64_t params_, std::uint64_t kept_ = 0,
            std::shared_ptr<const std::vector<std::uint8_t>> mask_ = {})
      : name(std::move(name_)), params(params_), kept(kept_), mask(std::move(mask_)) {}
  std::string name;
  std::uint64_t params = 0;
  std::uint64_t kept = 0;                                 // sparse: kept parameters (1 .. params); 0: dense
  std::shared_ptr<const std::vector<std::uint8_t>> mask;  // sparse, functional runs: per parameter, 1 kept
  [[nodiscard]] bool sparse() const { return kept > 0; }
  // Bytes of one weight stream: params x 4 (dense) or kept x (value + index) bytes.
  [[nodiscard]] std::uint64_t stream_bytes() const;
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

#include "memoryx/placement.h"

#include "sim/stream/chunk.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/errors.h"
#include "sim/units/quantity.h"

namespace wafersim::memoryx {

std::uint64_t LayerSpec::stream_bytes() const { return sparse() ? kept * sim::stream::kSparseEntryBytes : params * 4; }

const char* to_string(Tier t) { return t == Tier::Dram ? "dram" : "flash"; }

std::uint32_t Placement::flash_layers() const {
  return static_cast<std::uint32_t>(
      std::count_if(layers.begin(), layers.end(), [](const LayerPlacement& l) { return l.tier == Tier::Flash; }));
}

std::uint64_t round_up(std::uint64_t bytes, std::uint64_t page_bytes) {
  if (page_bytes <= 1) return bytes;
  return (bytes + page_bytes - 1) / page_bytes * page_bytes;
}

Placement place(const std::vector<LayerSpec>& layers, const MemoryXConfig& config, OptimizerKind optimizer) {
  const std::uint64_t bpp = config.bytes_per_param;
  const std::uint64_t needed_bpp = 4ULL * (2 + moment_count(optimizer));
  if (bpp < needed_bpp)
    throw sim::InputError(fmt::format(
        "memoryx.bytes_per_param: {} B per parameter cannot hold the FP32 weight, gradient and {} moment(s) of "
        "{} ({} B per parameter)",
        bpp, moment_count(optimizer), to_string(optimizer), needed_bpp));
  const std::uint64_t dram_page = config.dram.page_size.bytes();
  const std::uint64_t flash_page = config.flash.page_size.bytes();
  const std::uint64_t dram_cap = config.dram.capacity.bytes();
  const std::uint64_t flash_cap = config.flash.capacity.bytes();

  Placement p;
  p.layers.resize(layers.size());
  std::uint64_t all_in_dram = 0;
  std::uint64_t total_state = 0;
  std::uint64_t largest_weights = 0;
  for (const auto& l : layers) {
    if (l.params == 0) throw sim::InputError(fmt::format("memoryx: layer '{}' has no parameters", l.name));
    all_in_dram += round_up(l.params * bpp, dram_page);
    total_state += l.params * bpp;
    if (l.sparse() && l.kept > l.params)
      throw sim::InputError(fmt::format("memoryx: layer '{}' keeps {} of {} parameters", l.name, l.kept, l.params));
    largest_weights = std::max(largest_weights, l.stream_bytes());
  }

  std::uint64_t dram_free = dram_cap;
  if (all_in_dram > dram_cap) {
    p.staging_slots = config.prefetch_depth + 1;
    p.staging_slot_bytes = round_up(round_up(largest_weights, flash_page), dram_page);
    p.staging_bytes = p.staging_slots * p.staging_slot_bytes;
    if (p.staging_bytes > dram_cap)
      throw sim::InputError(fmt::format(
          "memoryx: model does not fit: staging flash-resident weights needs {} slots x {} B = {} B of DRAM, "
          "DRAM capacity is {} B (largest layer {} parameters)",
          p.staging_slots, p.staging_slot_bytes, p.staging_bytes, dram_cap, largest_weights / 4));
    dram_free -= p.staging_bytes;
    p.dram_used = p.staging_bytes;
  }
  std::uint64_t flash_free = flash_cap;
  std::uint64_t dram_next = p.staging_bytes;
  std::uint64_t flash_next = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    const std::uint64_t in_dram = round_up(l.params * bpp, dram_page);
    const std::uint64_t in_flash = round_up(l.params * bpp, flash_page);
    auto& lp = p.layers[i];
    if (in_dram <= dram_free) {
      lp = LayerPlacement{Tier::Dram, dram_next, in_dram};
      dram_next += in_dram;
      dram_free -= in_dram;
      p.dram_used += in_dram;
    } else if (in_flash <= flash_free) {
      lp = LayerPlacement{Tier::Flash, flash_next, in_flash};
      flash_next += in_flash;
      flash_free -= in_flash;
      p.flash_used += in_flash;
    } else {
      throw sim::InputError(fmt::format(
          "memoryx: model does not fit: layer '{}' (#{}, {} parameters x {} B) needs {} B, but DRAM has {} B free "
          "(of {} B, {} B staging) and flash {} B free (of {} B); the whole model needs {} B of weights and "
          "optimizer state",
          l.name, i, l.params, bpp, in_flash, dram_free, dram_cap, p.staging_bytes, flash_free, flash_cap,
          total_state));
    }
  }
  return p;
}

}  // namespace wafersim::memoryx

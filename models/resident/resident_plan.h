#pragma once
// The weight-resident placement for inference: every layer on its own region of PEs (side
// by side on a wafer, or over the wafers of a cluster when one is too small), its weights and
// KV cache held in SRAM, tokens pipelined through the regions (docs/compiler.md,
// "Weight-resident placement").

#include <cstdint>
#include <string>
#include <vector>

#include "models/compiler/target.h"
#include "models/model_spec.h"
#include "models/resident/layer_cost.h"

namespace wafersim::models::resident {

// A rectangle of PEs on one wafer: columns [x0, x1), rows [y0, y1).
struct Region {
  std::uint32_t wafer = 0;
  std::uint32_t x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  [[nodiscard]] std::uint32_t rows() const { return y1 - y0; }
  [[nodiscard]] std::uint32_t columns() const { return x1 - x0; }
  [[nodiscard]] std::uint64_t pes() const { return std::uint64_t{rows()} * columns(); }
};

struct ResidentLayer {
  std::string name;
  LayerKind kind = LayerKind::Linear;
  Region region;
  LayerCost decode;               // per token, attending to the whole configured sequence
  LayerCost prefill;              // per token of the prompt, attending to (prompt + 1) / 2 keys on average
  std::uint64_t in_wavelets = 0;  // per token, from other regions and the host
  std::uint64_t state_bytes = 0;  // weights and KV cache, whole
};

// Activations one layer sends another per token.
struct Transfer {
  std::string from, to;  // from "host" for model inputs
  std::uint64_t wavelets = 0;
  std::uint32_t hops = 0;  // centre to centre, on one wafer
  bool across_wafers = false;
};

// The activations crossing from wafer `from` to the next one per token.
struct WaferLink {
  std::uint32_t from = 0;
  std::uint64_t bytes = 0;
  std::uint64_t cycles = 0;  // per token: over the system I/O or the edge channels, whichever is slower
};

// What one wafer of the cluster offers the placement.
struct ClusterTarget {
  compiler::Target wafer;
  std::uint32_t systems = 1;        // wafers available
  double link_bits_per_s = 1.2e12;  // between consecutive wafers (one system's I/O)
};

struct ResidentPlan {
  std::uint32_t wafers = 1, wafers_available = 1;
  std::uint32_t shelves = 1, shelf_rows = 0;  // per wafer: bands of rows the regions are laid in
  std::uint64_t prompt = 0;                   // tokens per sample the prefill figures are for
  std::vector<ResidentLayer> layers;          // pipeline order (the model's graph order)
  std::vector<std::string> skipped;           // layers not part of inference (the loss)
  std::vector<Transfer> transfers;
  std::vector<WaferLink> links;
  std::uint64_t sram_capacity = 0, sram_max = 0;
  double sram_mean = 0;  // over every PE of the used wafers (unused ones count 0)
  std::uint64_t state_bytes = 0;
  std::uint32_t colors_max = 0, colors_available = 0;
  // Pipeline, per token.
  std::uint64_t stage_cycles = 0;    // decode: the slowest stage (the pipeline's interval)
  std::string stage;                 // its name: a layer or "wafer link N->N+1"
  std::string stage_binds;           // compute, sram, fabric, edge, wafer-link
  std::uint64_t latency_cycles = 0;  // decode: one token through every stage (sum of the stage bounds)
  std::uint64_t prefill_stage_cycles = 0;
  std::string prefill_stage;
  [[nodiscard]] double pipeline_tokens_per_cycle() const {
    return stage_cycles ? 1.0 / static_cast<double>(stage_cycles) : 0;
  }
  // Decode with `batch` sequences in flight: each waits for its previous token's whole pass.
  [[nodiscard]] std::uint64_t decode_step_cycles(std::uint64_t batch) const {
    return std::max(batch * stage_cycles, latency_cycles);
  }
  [[nodiscard]] std::uint64_t prefill_cycles(std::uint64_t batch) const {
    return batch * prompt * prefill_stage_cycles;
  }
};

// Contract: plans on the fewest wafers (then the fewest shelves) on which every region's PEs
// hold their layer's weights, KV cache (model.batch x model.sequence) and buffers; more
// columns go to the region with the slowest stage. Throws sim::InputError when the model does
// not fit all the wafers, naming the layer, the PE and the shortfall. `prompt` 0: the
// model's sequence.
ResidentPlan plan_resident(const ModelSpec& model, const ClusterTarget& target, std::uint64_t prompt = 0);

}  // namespace wafersim::models::resident

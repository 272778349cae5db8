#pragma once
// The cost of one layer held resident on a rectangular region of PEs: the SRAM each PE needs
// (weights, activation buffers, KV cache) and the work of the busiest PE per token, for a
// decode step at a given context length (docs/compiler.md, "Weight-resident placement").

#include <cstdint>
#include <string>

#include "models/compiler/layer_program.h"
#include "models/compiler/target.h"
#include "models/model_spec.h"

namespace wafersim::models::resident {

// How a matrix is cut over the region: rows split the input features (partial sums chained
// down each column) or the output features (partial sums chained along each row).
enum class Cut : std::uint8_t { RowsIn, RowsOut, Even };
const char* to_string(Cut c);

struct LayerCost {
  Cut cut = Cut::Even;
  std::uint64_t weight_bytes = 0;  // per PE, the busiest
  std::uint64_t kv_bytes = 0;      // per PE: the KV cache for the model's sequence (attention)
  std::uint64_t act_bytes = 0;     // per PE: activation buffers (double-buffered) and partial sums
  double mean_bytes = 0;           // over the region's PEs
  std::uint32_t colors = 0;        // colors the region's routes use
  compiler::Work work;             // the busiest PE per token (flops: the whole layer's, per token)
  compiler::Bound bound;           // per token
  [[nodiscard]] std::uint64_t sram_bytes() const { return weight_bytes + kv_bytes + act_bytes; }
};

// Contract: deterministic; `context` is the number of keys a query attends to (the KV cache
// length at this token); `rows` x `columns` >= 1. The cut of a matrix is the one that fits
// the SRAM, else the one with the lower bound (the smaller, then RowsIn, on a tie).
LayerCost layer_cost(const LayerSpec& layer, const ModelSpec& model, const compiler::Target& target, std::uint32_t rows,
                     std::uint32_t columns, std::uint64_t context);

// Bytes of state that must stay resident for the layer (weights and the KV cache), whole.
std::uint64_t resident_state_bytes(const LayerSpec& layer, const ModelSpec& model);

}  // namespace wafersim::models::resident

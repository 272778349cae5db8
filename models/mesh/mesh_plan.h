#pragma once
// The mesh placement's planner (docs/compiler.md, "Mesh placement"): on the fewest wafers of
// a cluster that hold the model, every wafer's layers spread over one region of PEs (the
// embedding on the first wafer, the final norm and the head on the last), layers pipelined
// across the wafers; the region on each wafer the one whose collectives are shortest among
// those whose busiest PE holds its weights, KV caches and activations.

#include <cstdint>
#include <string>
#include <vector>

#include "models/compiler/target.h"
#include "models/mesh/layout.h"
#include "models/model_spec.h"

namespace wafersim::models::mesh {

struct MeshTarget {
  compiler::Target wafer;
  std::uint32_t systems = 1;        // wafers available
  double link_bits_per_s = 1.2e12;  // between consecutive wafers (one system's I/O)
  sim::Cycle link_latency{0};       // besides the bytes' time (U)
  // A region to use on every wafer instead of the planner's choice (rows x columns; 0: plan).
  std::uint32_t rows = 0, columns = 0;
  // A prefill of this many prompt tokens (MeshGEMM): the smallest square whose busiest PE also
  // holds the GEMM's blocks, or where none does the shortest collectives among the regions at
  // most twice as long as wide that hold them (0: no prefill).
  std::uint64_t prefill = 0;
  // The prefill in passes of this many prompt tokens (MeshPrefill's chunks; 0: one pass, or
  // where its blocks do not fit, passes of MeshGEMM's blocks of one token).
  std::uint64_t prefill_chunk = 0;
};

struct MeshWafer {
  Region region;
  std::uint32_t first_layer = 0, layers = 0;
  bool embedding = false, head = false;
  Addrs addrs;  // the busiest PE's SRAM plan
  // With a prefill: the end of its SRAM with MeshGEMM's buffers (prefill_buffers), and the
  // bytes of those that lie in the decode's logits buffer.
  std::uint32_t prefill_end = 0, prefill_in_logits = 0;
};

struct MeshPlan {
  DecoderShape shape;
  std::uint32_t systems = 1;        // available
  std::uint64_t prefill = 0;        // prompt tokens the regions hold the prefill's blocks for
  std::uint32_t prefill_bytes = 0;  // those blocks on the busiest PE (prefill_buffers places them)
  // Where the prompt's blocks do not fit in one pass: the prefill in passes of this many tokens
  // (the shorter side of the smallest region: MeshGEMM's blocks of one token); 0: one pass.
  std::uint64_t prefill_chunk = 0;
  std::vector<MeshWafer> wafers;  // used, in pipeline order
  std::uint64_t sram_capacity = 0;
  // The residual stream crossing to the next wafer per token: bytes and cycles over the link.
  std::uint64_t link_bytes = 0, link_cycles = 0;
  std::string why;  // how the regions were chosen
};

// Contract: throws sim::InputError when the model is not a decoder the mesh covers, or when it
// does not fit all of `t.systems` wafers (naming the wafer's layers, the largest region, what
// its busiest PE needs by kind and the SRAM's size); runs in well under a second.
MeshPlan plan_mesh(const ModelSpec& model, const MeshTarget& t);

// The alignment of every SRAM buffer: the wafer's SRAM port word (a vector starting on one
// takes its words at the full rate).
std::uint32_t buffer_alignment(const compiler::Target& t);
// Cycles a PE-to-PE stage of the collectives costs besides the hop (for the trees' groups).
std::uint32_t collective_stage(const compiler::Target& t);

}  // namespace wafersim::models::mesh

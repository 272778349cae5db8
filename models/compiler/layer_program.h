#pragma once
// A compiled layer: what every PE runs, what enters and leaves through the wafer's edge, the
// SRAM it takes, the work it does and the cycles it cannot beat.

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/geometry.h"
#include "hw/isa/program.h"
#include "models/model_spec.h"

namespace wafersim::models::compiler {

enum class Phase : std::uint8_t {
  Forward,          // y = f(x)
  BackwardData,     // dx from dy (and the saved activations)
  BackwardWeights,  // dW (and db) from x and dy, streamed out
};
const char* to_string(Phase p);

// Part of a stream: `n0 x n1` elements of a host tensor, in the order
// for i0 < n0: for i1 < n1: element base + i0 * s0 + i1 * s1.
struct StreamSegment {
  std::uint32_t tensor = 0;  // index into CompiledModel::host_tensors
  std::uint64_t base = 0;
  std::uint64_t n0 = 1, n1 = 1;
  std::int64_t s0 = 0, s1 = 1;
  [[nodiscard]] std::uint64_t count() const { return n0 * n1; }
};

// One (edge channel, color) stream of a layer, in or out of the wafer. Weights travel as
// 16-bit values in the low half of a wavelet (or fp32 bits), gradients as fp32 bits.
struct EdgeStream {
  fabric::EdgeSide side = fabric::EdgeSide::West;
  std::uint32_t channel = 0;
  std::uint8_t color = 0;
  bool into_wafer = true;
  hw::DType dtype = hw::DType::F16;  // how a value is encoded in the payload
  bool accumulate = false;           // out: add into the host tensor (fp32) rather than store
  std::vector<StreamSegment> segments;
  [[nodiscard]] std::uint64_t wavelets() const {
    std::uint64_t n = 0;
    for (const auto& s : segments) n += s.count();
    return n;
  }
};

// Work of the busiest PE and link by resource: each is a lower bound on the layer's cycles.
struct Work {
  std::uint64_t datapath_steps = 0;                 // vector datapath steps (lanes per step) of the busiest PE
  std::uint64_t issue = 0;                          // instructions its main thread must issue (one per cycle at most)
  std::uint64_t sram_reads = 0;                     // port-word reads of the busiest PE
  std::uint64_t sram_writes = 0;                    // port-word writes of the busiest PE
  std::uint64_t ramp_in = 0;                        // wavelets into the busiest PE (one per cycle)
  std::uint64_t ramp_out = 0;                       // wavelets out of the busiest PE
  std::uint64_t link = 0;                           // wavelets over the busiest router-to-router link
  std::uint64_t edge = 0;                           // wavelets over the busiest edge channel
  std::uint64_t flops = 0;                          // over the whole wafer
  std::uint64_t wavelets_in = 0, wavelets_out = 0;  // through the edge, all channels
};

enum class Binding : std::uint8_t { Compute, SramPorts, Fabric, EdgeIo };
const char* to_string(Binding b);

struct Bound {
  std::uint64_t cycles = 0;
  Binding binds = Binding::Compute;
  std::uint64_t compute = 0, sram = 0, fabric = 0, edge = 0;  // each resource's own bound
};

struct SramUse {
  std::uint64_t max_bytes = 0;  // on the PE that needs most
  double mean_bytes = 0;        // over every PE of the wafer (unused ones count 0)
};

struct LayerProgram {
  std::string layer;
  LayerKind kind = LayerKind::Linear;
  Phase phase = Phase::Forward;
  std::vector<hw::isa::Placement> code;      // empty when the mapping was planned without code
  bool analytical = false;                   // no PE code (no kernel, or beyond code generation's limits)
  std::vector<EdgeStream> streams;           // empty when planned without code
  std::vector<std::uint32_t> reads, writes;  // activation tensors (CompiledModel::tensors)
  std::vector<std::uint32_t> operands;       // the kernel's tensors in its own order (kinds that need it)
  std::vector<bool> accumulate;              // per input gradient: adds into what another consumer wrote
  Work work;
  Bound bound;
  SramUse sram;
  std::uint32_t rows = 0, columns = 0;  // the region: used rows x used columns
  std::uint32_t colors = 0;             // colors its routes use
  bool recompute = false;               // a forward step run again before its block's backward
  [[nodiscard]] std::string name() const { return layer + " " + (recompute ? "recompute" : to_string(phase)); }
};

}  // namespace wafersim::models::compiler

#pragma once
// Allreduce along the lines of a mesh region: every line (each column, or each row) cut into
// segments, each segment reduced by its LineTree (line_tree.h) and the result broadcast back
// to every PE of the segment. Five colors per family of lines (docs/compiler.md, "Mesh
// placement"): two for the phase-1 chains (alternating by distance from the root), two for
// the phase-2 chains of group roots (by group; the two sides of the root start on different
// ones), one for the broadcast.

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/route_table.h"
#include "hw/isa/opcodes.h"
#include "models/compiler/program_builder.h"
#include "models/mesh/line_tree.h"
#include "models/mesh/region.h"

namespace wafersim::models::mesh {

struct LineColors {
  std::uint8_t chain[2] = {0, 1};
  std::uint8_t roots[2] = {2, 3};
  std::uint8_t bcast = 4;
};

// The lines of a region along one axis, each cut the same way into segments.
struct LineFamily {
  Axis axis = Axis::Column;
  std::uint32_t length = 1;  // PEs per line: the region's rows (Column) or columns (Row)
  std::vector<std::uint32_t> starts{0};
  std::vector<LineTree> trees;  // one per segment
  LineColors colors;

  // One segment of the whole line, with the tree group that minimises its latency.
  static LineFamily whole(Axis axis, std::uint32_t length, std::uint32_t stage_cycles, LineColors colors);
  // Segments [starts[s], starts[s + 1]) (the last to `length`).
  static LineFamily segmented(Axis axis, std::uint32_t length, std::vector<std::uint32_t> starts,
                              std::uint32_t stage_cycles, LineColors colors);
  [[nodiscard]] std::uint32_t segment_of(std::uint32_t position) const;
  [[nodiscard]] std::uint32_t segment_start(std::uint32_t s) const { return starts.at(s); }
  [[nodiscard]] std::uint32_t segment_length(std::uint32_t s) const {
    return (s + 1 < starts.size() ? starts[s + 1] : length) - starts[s];
  }
  [[nodiscard]] LineRole role(std::uint32_t position) const;
  // Hops and PE-to-PE stages of the slowest segment's tree (for the bound's latency term).
  [[nodiscard]] std::uint32_t max_hops() const;
  [[nodiscard]] std::uint32_t max_stages() const;
};

// Sets the family's routes on every line of `region` (on `table`, whose (router, color)
// entries it uses must be empty: a second route on one is a planning error, std::logic_error).
void add_routes(fabric::RouteTable& table, const Region& region, const LineFamily& family);

// Emits, for a PE with `role` in the family, the reduction of `n` fp32 values at byte address
// `buf` with `op` (FAdd or FMax) to the segment's root, in place there: synchronous vector
// instructions, the PE's partial combined as op(received, own) in the tree's order
// (tree_reduce). `name` prefixes the descriptors it declares.
void emit_reduce(compiler::ProgramBuilder& b, const LineFamily& family, const LineRole& role, std::uint32_t buf,
                 std::uint32_t n, hw::isa::Op op, const std::string& name);
// Emits the broadcast of `n` values of `type` at `buf` from the segment's root to every PE of
// it (16-bit values travel in the low half of a wavelet).
void emit_broadcast(compiler::ProgramBuilder& b, const LineFamily& family, const LineRole& role, std::uint32_t buf,
                    std::uint32_t n, hw::DType type, const std::string& name);
// Both: every PE of the segment ends with the reduction at `buf`.
void emit_allreduce(compiler::ProgramBuilder& b, const LineFamily& family, const LineRole& role, std::uint32_t buf,
                    std::uint32_t n, hw::isa::Op op, const std::string& name);

// The gather of `units` units (each a run of values) to a segment's root M along its tree:
// the PEs, in the order M, the side before M outward, the side after it outward, hold
// consecutive shares of the units as evenly as they go. Each PE other than M sends its share,
// then relays its phase-1 input (the rest of its group, outward), then, at a group root, its
// phase-2 input (the groups beyond), so every stream is one contiguous run of units; M takes
// the two sides' runs. Units [lo, hi) are a PE's share; the relays and M's runs in units.
struct GatherPlan {
  std::uint32_t lo = 0, hi = 0;                 // the PE's share
  std::uint32_t chain = 0, roots = 0;           // units relayed from phase 1 and phase 2 (not M)
  std::uint32_t before[2] = {}, after[2] = {};  // M: the runs it receives from each side
  [[nodiscard]] std::string key() const;
};
GatherPlan gather_plan(const LineFamily& family, std::uint32_t position, std::uint32_t units);

// Emits the gather of gather_plan(family, position, units) for values of `unit` fp32 each at
// `buf` (a unit u at buf + u x unit x 4) and ends the current task: task `then` runs once the
// PE has sent (or, at M, received) all it takes part in. The sends are ordered on microthread
// `ut`; M receives its sides on microthreads ut and ut + 1. Deadlock-free: every PE's sends
// wait only on PEs nearer M, and M takes both sides at once.
void emit_gather(compiler::ProgramBuilder& b, const LineFamily& family, std::uint32_t position, std::uint32_t buf,
                 std::uint32_t units, std::uint32_t unit, std::uint8_t then, std::uint8_t ut, const std::string& name);

// Fabric cycles a PE-to-PE stage of the chains costs besides the hop: the instruction's start,
// its latency before the first wavelet leaves, the ramps (for the tree's group size).
std::uint32_t stage_cycles(std::uint32_t vector_start, std::uint32_t add_latency, std::uint32_t ramp_latency);

}  // namespace wafersim::models::mesh

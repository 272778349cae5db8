#pragma once
// One step of a mesh-placed model (a kernel over the whole region, docs/compiler.md, "Mesh
// placement"): the programs of its PEs, kept compact (PEs whose code is the same share a
// program: classes of rows times classes of columns), what it does and its bound.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hw/isa/program.h"
#include "models/compiler/layer_program.h"

namespace wafersim::models::mesh {

// The step's lower bound per resource (each one wavelet, datapath step or port access a
// cycle): the roofline (compute, SRAM ports, fabric, edge I/O) and, apart from it, the
// latency of the collectives' trees (hops plus the PE-to-PE stages on the longest path).
struct StepBound {
  std::uint64_t compute = 0, sram = 0, fabric = 0, edge = 0;
  std::uint64_t latency = 0;
  [[nodiscard]] std::uint64_t roofline() const;
  [[nodiscard]] const char* binds() const;  // the roofline's largest term
  [[nodiscard]] std::uint64_t with_latency() const { return std::max(roofline(), latency); }
};

struct MeshStep {
  std::string name;    // "h0.qkv", "embed", "ln_f", "head"
  std::string kernel;  // gemv, rmsnorm, attention, embedding
  std::uint32_t layer = 0;
  std::vector<std::shared_ptr<const hw::isa::Program>> programs;
  std::vector<std::uint32_t> row_class, col_class;  // per region row and column
  std::uint32_t col_classes = 0;
  std::vector<std::uint32_t> table;  // row class x col_classes + col class: index into programs
  compiler::Work work;               // the busiest PE (flops: the step's useful FLOPs)
  StepBound bound;

  [[nodiscard]] const std::shared_ptr<const hw::isa::Program>& program(std::uint32_t r, std::uint32_t c) const {
    return programs[table[row_class[r] * col_classes + col_class[c]]];
  }
};

// Builds a step's programs: rows with equal row_key(r) share a class, columns with equal
// col_key(c) likewise, and build(r, c) runs once per pair of classes, for the first row and
// column of each (not at all when `code` is false: the classes only).
using KeyOf = std::function<std::string(std::uint32_t)>;
using Build = std::function<std::shared_ptr<const hw::isa::Program>(std::uint32_t r, std::uint32_t c)>;
void build_programs(MeshStep& step, std::uint32_t rows, std::uint32_t columns, const KeyOf& row_key,
                    const KeyOf& col_key, const Build& build, bool code = true);

// Likewise for code that depends on a PE's row and column at once: every row and column a
// class of its own, and PEs with equal pe_key(r, c) sharing one program, built once for the
// first of them.
using PeKeyOf = std::function<std::string(std::uint32_t r, std::uint32_t c)>;
void build_programs_by_pe(MeshStep& step, std::uint32_t rows, std::uint32_t columns, const PeKeyOf& pe_key,
                          const Build& build, bool code = true);

}  // namespace wafersim::models::mesh

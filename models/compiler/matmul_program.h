#pragma once
// The per-row program of the matrix product y = x M (+ b) (docs/compiler.md, "Linear forward"),
// shared by the weight-streaming kernel (lower_matmul) and the weight-resident one
// (resident::lower_resident_matmul): the same chunks, chains and rounding, only the source of
// each weight differs.

#include <cstdint>
#include <memory>
#include <string>

#include "hw/isa/program.h"
#include "models/compiler/kernels.h"

namespace wafersim::models::compiler {

// Where the weights come from.
struct MatmulWeights {
  enum class Source : std::uint8_t {
    Streamed,  // received from the row's weight color (the bias first, then chunk by chunk)
    Resident,  // loaded from the PE's SRAM, in the order a stream would bring them
  };
  Source source = Source::Streamed;
  std::uint32_t addr = 0;       // Resident: the slice's first weight
  std::uint32_t bias_addr = 0;  // Resident: the bias of the slice's own outputs
  bool gemv = false;            // Resident: vector FMACs over the outputs (few tokens per PE)
};

// The layer's scratch buffers (the same address on every PE).
struct MatmulScratch {
  std::uint32_t partials[2] = {0, 0};
  std::uint32_t bias = 0, bias32 = 0;  // with a bias: as received, and widened to fp32
  std::uint32_t grad32 = 0;            // accumulate_out with fp32 accumulation
  std::uint32_t table = 0;             // the chunk table (chunk_table_bytes(rows))
};

// Contract: the program every PE of used row `s` runs: one task; chunk j (the outputs row j
// owns) in order: partial sums over the row's inputs, sent down or up the column chain to
// row j, or, for j = s, summed with the chains' partials, the bias added and written out.
std::shared_ptr<const hw::isa::Program> matmul_row_program(const KernelContext& ctx, const MatmulArgs& m,
                                                           const MatmulScratch& buf, const MatmulWeights& w,
                                                           std::uint32_t s, const std::string& name);

}  // namespace wafersim::models::compiler

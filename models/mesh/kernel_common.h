#pragma once
// What the mesh kernels share: the work of an allreduce and of a PE's FMACs for the bound,
// and the step's bound from the work of its busiest PE.

#include <cstdint>
#include <string>

#include "models/compiler/layer_program.h"
#include "models/compiler/program_builder.h"
#include "models/compiler/target.h"
#include "models/mesh/collective.h"
#include "models/mesh/kernels.h"
#include "models/mesh/step.h"

namespace wafersim::models::mesh {

// Adds an allreduce of n fp32 values on `family` to the busiest PE's work (a group root:
// phase-1, phase-2 and broadcast inputs; a link carries a chain and a phase-2 stream one way)
// and its tree's latency (hops to the root and back, one cycle each, plus the last value's
// n - 1 cycles behind the first) to `latency`.
void add_allreduce(compiler::Work& w, std::uint64_t& latency, const LineFamily& family, std::uint64_t n,
                   const compiler::Target& t);

// Adds `fmacs` mixed fp32-accumulating FMACs of `n` elements each (16-bit inputs).
void add_fmacs(compiler::Work& w, const compiler::Target& t, std::uint64_t fmacs, std::uint64_t n);

// Adds a vector operation of n elements of `bytes` each reading `sources` operands from
// memory (and writing one), at `lanes` elements a step (1 for iterative ones, which also
// occupy the unit `iterative` cycles an element).
void add_vector(compiler::Work& w, const compiler::Target& t, std::uint64_t n, std::uint32_t bytes,
                std::uint32_t sources, std::uint32_t lanes, std::uint32_t iterative = 0);

// The decode's product g of `layer` (kernel_gemv.cpp): its input and output vectors' addresses,
// the residual it adds (o: x, down: x1; else 0) and whether it ends in SwiGLU (gate/up: its n
// sums give n / 2 outputs).
struct ProductIo {
  std::uint32_t in = 0, out = 0, residual = 0;
  bool swiglu = false;
};
ProductIo product_io(const MeshLayout& l, Gemv g, std::uint32_t layer);
// Emits the finish of product g at a line's root: its n fp32 sums at the layout's acc rounded
// to the model's format, then the residual added or SwiGLU applied, at its output address.
void emit_product_finish(compiler::ProgramBuilder& b, const MeshLayout& l, Gemv g, std::uint32_t layer,
                         std::uint32_t n);

// Adds that finish of n sums to `w` (as the decode's bound counts it at a line's root) and
// returns its datapath cycles.
std::uint64_t add_product_finish(compiler::Work& w, const compiler::Target& t, const MeshLayout& l, Gemv g,
                                 std::uint32_t layer, std::uint32_t n);

// Emits a shift of n values of `type` along a ring (ring.h): the `n` at byte address `from`
// to the ring predecessor on `send_color`, the successor's into `to` on `recv_color`
// (asynchronous, on microthreads 2 and 1), then returns; task `then` runs once both have
// finished. `tag` prefixes the descriptors it declares. Without `sends` (a unit's member that
// is not its sender, ring.h) it only receives, and `then` runs once it has.
void emit_ring_shift(compiler::ProgramBuilder& b, hw::DType type, std::uint32_t from, std::uint32_t to, std::uint32_t n,
                     std::uint8_t send_color, std::uint8_t recv_color, std::uint8_t then, const std::string& tag,
                     bool sends = true);

// rstd = rsqrt(r4 x inv_d + eps) into r5 with the reference's steps, on registers only (so a
// timing-only run touches no SRAM page); uses r5, r7 to r10 and r13 to r15.
void emit_rstd(compiler::ProgramBuilder& b, std::uint32_t inv_d, std::uint32_t eps);

// Whether PE (r, c) starts a prefill product with token block j (ring positions a + b = j
// mod N), and whether it holds block j's outputs of its line after all N steps of product g
// (in a unit of two along the lines g reduces over, only the unit's sender holds them).
bool starts_with(const MeshLayout& l, std::uint32_t r, std::uint32_t c, std::uint64_t j);
bool ends_with(const MeshLayout& l, Gemv g, std::uint32_t r, std::uint32_t c, std::uint64_t j);

// The tail of a line's product: n fp32 sums at `sums` reduced to the line's root, rounded
// there to `type` at `out`, and `out` broadcast to every PE of the line (tags prefix the
// collectives' descriptors: `tag` the reduction's, `bc_tag` the broadcast's).
void emit_reduce_round_broadcast(compiler::ProgramBuilder& b, const LineFamily& family, const LineRole& role,
                                 std::uint32_t sums, std::uint32_t out, std::uint32_t n, hw::DType type,
                                 const std::string& tag, const std::string& bc_tag);

// RMSNorm's last steps on one token's features, as the reference takes them: xw = widen(x),
// xw *= rstd (register `rstd`), xw *= gamma, y = round(xw); x and y in `type`, xw and gamma
// fp32 descriptors of the same length.
void emit_rmsnorm_scale(compiler::ProgramBuilder& b, hw::DType type, unsigned x, unsigned xw, unsigned gamma,
                        unsigned y, unsigned rstd);

// The step's bound from the busiest PE's work and the collectives' latency.
StepBound bound_of(const compiler::Work& w, std::uint64_t latency, const compiler::Target& t);

}  // namespace wafersim::models::mesh

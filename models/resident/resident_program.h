#pragma once
// A model compiled for weight-resident inference on one wafer, with PE code: every linear
// layer's weights have their own SRAM for the whole run and its product reads them there
// (kernel_resident_matmul.h); the other layers use the streaming kernels. Layers run one
// after another on the wafer's layout (the pipeline over regions is planned analytically,
// resident_plan.h).

#include <cstdint>
#include <utility>
#include <vector>

#include "models/compiler/compiled_model.h"
#include "models/compiler/kernels.h"
#include "models/compiler/schedule.h"
#include "models/resident/kernel_resident_matmul.h"

namespace wafersim::models::resident {

struct ResidentMatmul {
  std::size_t program = 0;  // index into the compiled model's programs
  compiler::MatmulArgs args;
  ResidentWeights weights;
};

struct ResidentProgram {
  compiler::CompiledModel cm;           // programs[0] is the weight preload (filled by place_weights)
  std::vector<ResidentMatmul> matmuls;  // every resident product
  std::uint64_t weight_bytes = 0;       // resident weights per PE (the busiest), all layers
};

// The forward product of a linear step with its weights resident: its arguments, and SRAM for
// its weights (then bias) allocated in `arena` (never released: they stay for the run).
// Throws sim::InputError naming the layer when they do not fit.
std::pair<compiler::MatmulArgs, ResidentWeights> reserve_resident_matmul(const compiler::CompiledModel& cm,
                                                                         const compiler::Step& step,
                                                                         compiler::SramArena& arena,
                                                                         compiler::Accumulate accumulate);

// Contract: forward only (inference); throws sim::InputError naming the layer when the
// resident weights and the run's activations do not fit the SRAM, or a kind has no code.
ResidentProgram compile_resident_program(const ModelSpec& model, const compiler::Target& target,
                                         compiler::Accumulate accumulate = compiler::Accumulate::Fp32);

// Appends the low `esz` bytes of `bits` to `out`, least significant first (an SRAM image).
void append_bits(std::vector<std::uint8_t>& out, std::uint32_t bits, std::uint32_t esz);

}  // namespace wafersim::models::resident

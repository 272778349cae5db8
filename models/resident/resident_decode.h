#pragma once
// Weight-resident inference token by token with PE code: one program per layer and token
// position on a one-token-per-sample layout, the linear weights resident (as in
// resident_program.h) and each attention layer's KV cache resident in SRAM for the whole run.
// Positions [0, prompt) are the prompt: fed one token at a time (filling the cache), or run
// as one parallel prefill whose keys and values are then copied into the cache; the rest are
// decode steps.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/resident/kernel_decode_attention.h"
#include "models/resident/resident_program.h"

namespace wafersim::models::resident {

struct DecodeAttentionStep {
  std::size_t program = 0;  // index into rp.cm.programs
  DecodeAttentionArgs args;
};

struct KvCacheFillStep {
  std::size_t program = 0;                     // index into rp.cm.programs
  KvCacheFillArgs args;                        // its k and v: the prefill's keys and values, seen by rp
  std::uint32_t prefill_k = 0, prefill_v = 0;  // the same in the prefill's compiled model
};

struct ResidentDecode {
  // Token by token: programs[0] places the weights, then every position [0, positions).
  // Parallel prefill: the cache fills, then the decode positions [prompt, positions).
  ResidentProgram rp;
  // Parallel prefill only: programs[0] places the weights, then every layer once for the
  // batch x prompt tokens (one sample per column), leaving each attention layer's keys and
  // values for the fills. It runs first, on the same wafer (runtime::Executor::continue_with).
  std::optional<ResidentProgram> prefill;
  std::uint64_t prompt = 0, positions = 0;     // positions = prompt + decode tokens
  std::uint64_t first_position = 0;            // rp's first position: 0 or the prompt
  std::vector<std::size_t> position_start;     // first program in rp of each of its positions
  std::vector<DecodeAttentionStep> attention;  // every attention step in rp, in program order
  std::vector<KvCacheFillStep> fills;          // parallel prefill: one per attention layer
  std::vector<std::uint32_t> inputs;           // per position of rp and model input: its tensor
  std::vector<std::uint32_t> prefill_inputs;   // parallel prefill: its model inputs' tensors
};

// The tensors of the model's inputs other than labels, in the model's order.
std::vector<std::uint32_t> model_inputs(const compiler::CompiledModel& cm);

// Contract: `model` has sequence 1 (one token per sample per step); `capacity` is the KV
// cache's length (>= positions). With `prompt_model` (the same model with sequence `prompt`)
// the prompt runs as one parallel prefill whose keys and values are then copied into the
// caches; without it, one position per step. Throws sim::InputError when something does not
// fit, or for a parallel prefill of a model with learned positions.
ResidentDecode compile_resident_decode(const ModelSpec& model, const compiler::Target& target, std::uint64_t prompt,
                                       std::uint64_t positions, std::uint64_t capacity,
                                       compiler::Accumulate accumulate = compiler::Accumulate::Fp32,
                                       const ModelSpec* prompt_model = nullptr);

}  // namespace wafersim::models::resident

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
#include "models/runtime/executor.h"

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

// Contract: `model` has sequence 1 (one token per sample per step); `capacity` is the KV
// cache's length (>= positions). With `prompt_model` (the same model with sequence `prompt`)
// the prompt runs as one parallel prefill whose keys and values are then copied into the
// caches; without it, one position per step. Throws sim::InputError when something does not
// fit, or for a parallel prefill of a model with learned positions.
ResidentDecode compile_resident_decode(const ModelSpec& model, const compiler::Target& target, std::uint64_t prompt,
                                       std::uint64_t positions, std::uint64_t capacity,
                                       compiler::Accumulate accumulate = compiler::Accumulate::Fp32,
                                       const ModelSpec* prompt_model = nullptr);

// The inputs of every position (token ids below the vocabulary, activations in [-1, 1)),
// deterministic in `seed` and the same in both modes: data.preload becomes exactly those of
// rp's positions; with a parallel prefill, prefill_data->preload those of the prompt (position
// p of sample b is the prefill's token b x prompt + p).
void add_position_inputs(const ResidentDecode& rd, runtime::HostData& data, std::uint64_t seed,
                         runtime::HostData* prefill_data = nullptr);

// After an attention step ran: the cache holds the step's key and value at its position
// (values widened), and the output equals models/reference attention over the cached keys
// and values for that position, bit for bit.
runtime::Check check_decode_attention(runtime::Executor& exec, const ResidentDecode& rd,
                                      const DecodeAttentionStep& step);

// The parallel prefill's keys and values per fill (token-major, as runtime::Executor::read
// gives them), read when the prefill has run, before the executor continues with rp.
struct PrefillKv {
  std::vector<runtime::Bits> k, v;
};
PrefillKv read_prefill_kv(runtime::Executor& exec, const ResidentDecode& rd);

// After a fill ran: the cache holds the prefill's keys and values (`kv`) at positions
// [0, prompt), values widened, bit for bit.
runtime::Check check_kv_cache_fill(runtime::Executor& exec, const ResidentDecode& rd, std::size_t fill,
                                   const PrefillKv& kv);

// The checks of rp's step `program` that the executor does not make (attention steps, and
// fills against `kv`): empty for the others.
std::vector<runtime::Check> check_resident_step(runtime::Executor& exec, const ResidentDecode& rd, std::size_t program,
                                                const PrefillKv* kv = nullptr);

}  // namespace wafersim::models::resident

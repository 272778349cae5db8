#pragma once
// Weight-resident inference token by token with PE code: one program per layer and token
// position on a one-token-per-sample layout, the linear weights resident (as in
// resident_program.h) and each attention layer's KV cache resident in SRAM for the whole run.
// Positions [0, prompt) are the prefill (the prompt fed one token at a time, filling the
// cache), the rest are decode steps.

#include <cstdint>
#include <string>
#include <vector>

#include "models/resident/kernel_decode_attention.h"
#include "models/resident/resident_program.h"
#include "models/runtime/executor.h"

namespace wafersim::models::resident {

struct DecodeAttentionStep {
  std::size_t program = 0;  // index into cm.programs
  DecodeAttentionArgs args;
};

struct ResidentDecode {
  ResidentProgram rp;                          // programs[0] places the weights
  std::uint64_t prompt = 0, positions = 0;     // positions = prompt + decode tokens
  std::vector<std::size_t> position_start;     // first program of each position
  std::vector<DecodeAttentionStep> attention;  // every attention step, in program order
  std::vector<std::uint32_t> inputs;           // per position and model input: its tensor
};

// Contract: `model` has sequence 1 (one token per sample per step); `capacity` is the KV
// cache's length (>= positions). Throws sim::InputError when something does not fit.
ResidentDecode compile_resident_decode(const ModelSpec& model, const compiler::Target& target, std::uint64_t prompt,
                                       std::uint64_t positions, std::uint64_t capacity,
                                       compiler::Accumulate accumulate = compiler::Accumulate::Fp32);

// The inputs of every position (token ids below the vocabulary, activations in [-1, 1)),
// deterministic in `seed`: data.preload becomes exactly these.
void add_position_inputs(const ResidentDecode& rd, runtime::HostData& data, std::uint64_t seed);

// After an attention step ran: the cache holds the step's key and value at its position
// (values widened), and the output equals models/reference attention over the cached keys
// and values for that position, bit for bit.
runtime::Check check_decode_attention(runtime::Executor& exec, const ResidentDecode& rd,
                                      const DecodeAttentionStep& step);

}  // namespace wafersim::models::resident

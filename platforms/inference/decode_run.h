#pragma once
// The run of a weight-resident decode on a wafer: the positions' inputs, and the checks of the
// attention steps and the KV cache fills against models/reference.

#include <cstdint>
#include <memory>
#include <vector>

#include "models/resident/resident_decode.h"
#include "platforms/runtime/executor.h"
#include "platforms/runtime/model_run.h"

namespace wafersim::platforms::inference {

using models::resident::DecodeAttentionStep;
using models::resident::ResidentDecode;

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

// The checks a decode run makes beyond the executor's, as hooks of runtime::ModelRun: with a
// parallel prefill, its keys and values read once it has run; every attention step and fill
// of rd.rp checked (check_resident_step).
runtime::ModelRunHooks decode_hooks(const ResidentDecode& rd);

}  // namespace wafersim::platforms::inference

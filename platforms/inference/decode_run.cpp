#include "platforms/inference/decode_run.h"

#include <fmt/format.h>

#include <algorithm>

#include "hw/numerics/softfloat.h"
#include "models/reference/attention.h"
#include "sim/errors.h"

namespace wafersim::platforms::inference {
using namespace models::compiler;
using namespace models::resident;
using models::InputSpec;
using models::LayerKind;

void add_position_inputs(const ResidentDecode& rd, runtime::HostData& data, std::uint64_t seed,
                         runtime::HostData* prefill_data) {
  const CompiledModel& cm = rd.rp.cm;
  if (rd.prefill && !prefill_data)
    throw std::logic_error("add_position_inputs: a parallel prefill needs its own host data");
  data.preload.clear();  // the model's own inputs are replaced by the positions'
  runtime::Random rng(seed ^ 0x5eedc0de0001ull);
  std::uint64_t vocab = 2;
  for (const auto& l : cm.model.layers)
    vocab = std::max<std::uint64_t>(vocab, l.kind == LayerKind::Embedding ? l.vocabulary : 0);
  const std::vector<std::uint32_t> inputs = model_inputs(cm);
  const std::uint64_t B = cm.layout.tokens, P = rd.prompt;
  if (rd.prefill) {
    prefill_data->preload.clear();
    for (auto id : rd.prefill_inputs) {
      const Tensor& t = rd.prefill->cm.tensors.at(id);
      prefill_data->preload.emplace_back(id, runtime::Bits(B * P * (t.per_token() ? 1 : t.features)));
    }
  }
  for (std::uint64_t p = 0; p < rd.positions; ++p)
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const Tensor& t = cm.tensors.at(inputs[k]);
      const std::uint64_t width = t.per_token() ? 1 : t.features;
      runtime::Bits v(B * width);
      for (auto& e : v)
        e = t.per_token() ? static_cast<std::uint32_t>(rng.below(vocab))
                          : hw::numerics::from_double(t.dtype, 2 * rng.uniform() - 1);
      if (p >= rd.first_position) {
        data.preload.emplace_back(rd.inputs.at((p - rd.first_position) * inputs.size() + k), std::move(v));
        continue;
      }
      runtime::Bits& to = prefill_data->preload.at(k).second;  // token b x prompt + p of the prefill
      for (std::uint64_t b = 0; b < B; ++b)
        for (std::uint64_t f = 0; f < width; ++f) to[(b * P + p) * width + f] = v[b * width + f];
    }
}

runtime::Check check_decode_attention(runtime::Executor& exec, const ResidentDecode& rd,
                                      const DecodeAttentionStep& step) {
  namespace ref = models::reference;
  const CompiledModel& cm = rd.rp.cm;
  const DecodeAttentionArgs& a = step.args;
  const std::uint64_t B = cm.layout.tokens, H = a.heads, KV = a.kv_heads, hd = a.head_dim, S = a.capacity;
  const std::uint64_t n = a.position + 1;
  const ref::Format f = ref::format_of(cm.model.dtype);
  runtime::Check c;
  c.what = a.layer + " (output and KV cache)";
  c.reference = "models/reference attention_forward over the cached keys";
  const runtime::Bits q = exec.read(a.q), k = exec.read(a.k), v = exec.read(a.v), out = exec.read(a.out);
  const runtime::Bits kc = exec.read(a.k_cache), vc = exec.read(a.v_cache);
  ref::Tensor rq(f, {B, n, H * hd}), rk(f, {B, n, KV * hd}), rv(f, {B, n, KV * hd});
  auto mismatch = [&](const std::string& what) {
    if (c.first_mismatch.empty()) c.first_mismatch = what;
    ++c.mismatches;
  };
  const hw::DType dt = hw_dtype(cm.model.dtype);
  for (std::uint64_t b = 0; b < B; ++b) {
    for (std::uint64_t e = 0; e < H * hd; ++e) rq.set_bits(rq.at(b * n + a.position, e), q[b * H * hd + e]);
    for (std::uint64_t g = 0; g < KV; ++g)
      for (std::uint64_t d = 0; d < hd; ++d) {
        const std::uint64_t row = (b * KV + g) * hd * S + d * S, e = g * hd + d;
        ++c.compared;
        if (kc[row + a.position] != k[b * KV * hd + e] ||
            vc[row + a.position] !=
                hw::numerics::from_double(hw::DType::F32, hw::numerics::to_double(dt, v[b * KV * hd + e])))
          mismatch(fmt::format("cache of sample {}, feature {}, key {}", b, e, a.position));
        for (std::uint64_t j = 0; j < n; ++j) {
          rk.set_bits(rk.at(b * n + j, e), kc[row + j]);
          rv.set_bits(rv.at(b * n + j, e),
                      hw::numerics::from_double(dt, hw::numerics::to_double(hw::DType::F32, vc[row + j])));
        }
      }
  }
  const ref::Tensor want =
      ref::attention_forward(rq, rk, rv, {static_cast<std::uint32_t>(H), static_cast<std::uint32_t>(KV), true});
  for (std::uint64_t b = 0; b < B; ++b)
    for (std::uint64_t e = 0; e < H * hd; ++e) {
      ++c.compared;
      if (out[b * H * hd + e] != static_cast<std::uint32_t>(want.bits(want.at(b * n + a.position, e))))
        mismatch(fmt::format("output of sample {}, feature {}", b, e));
    }
  return c;
}

PrefillKv read_prefill_kv(runtime::Executor& exec, const ResidentDecode& rd) {
  PrefillKv kv;
  for (const auto& f : rd.fills) {
    kv.k.push_back(exec.read(f.prefill_k));
    kv.v.push_back(exec.read(f.prefill_v));
  }
  return kv;
}

runtime::Check check_kv_cache_fill(runtime::Executor& exec, const ResidentDecode& rd, std::size_t fill,
                                   const PrefillKv& kv) {
  const CompiledModel& cm = rd.rp.cm;
  const KvCacheFillArgs& a = rd.fills.at(fill).args;
  const std::uint64_t B = cm.layout.tokens, KV = a.kv_heads, hd = a.head_dim, S = a.capacity, P = a.prompt;
  const hw::DType dt = hw_dtype(cm.model.dtype);
  runtime::Check c;
  c.what = a.layer + " (the prefill's keys and values in the KV cache)";
  c.reference = "the parallel prefill's keys and values";
  const runtime::Bits kc = exec.read(a.k_cache), vc = exec.read(a.v_cache);
  const runtime::Bits &k = kv.k.at(fill), &v = kv.v.at(fill);
  for (std::uint64_t b = 0; b < B; ++b)
    for (std::uint64_t e = 0; e < KV * hd; ++e)
      for (std::uint64_t j = 0; j < P; ++j) {
        const std::uint64_t at = b * KV * hd * S + e * S + j, from = (b * P + j) * KV * hd + e;
        ++c.compared;
        if (kc[at] != k.at(from) ||
            vc[at] != hw::numerics::from_double(hw::DType::F32, hw::numerics::to_double(dt, v.at(from)))) {
          if (c.first_mismatch.empty()) c.first_mismatch = fmt::format("sample {}, feature {}, key {}", b, e, j);
          ++c.mismatches;
        }
      }
  return c;
}

std::vector<runtime::Check> check_resident_step(runtime::Executor& exec, const ResidentDecode& rd, std::size_t program,
                                                const PrefillKv* kv) {
  std::vector<runtime::Check> out;
  for (const auto& a : rd.attention)
    if (a.program == program) out.push_back(check_decode_attention(exec, rd, a));
  for (std::size_t f = 0; f < rd.fills.size(); ++f)
    if (rd.fills[f].program == program) {
      if (!kv) throw std::logic_error("check_resident_step: a fill needs the prefill's keys and values");
      out.push_back(check_kv_cache_fill(exec, rd, f, *kv));
    }
  return out;
}

runtime::ModelRunHooks decode_hooks(const ResidentDecode& rd) {
  auto kv = std::make_shared<PrefillKv>();
  runtime::ModelRunHooks h;
  h.after_first = [&rd, kv](runtime::Executor& exec) { *kv = read_prefill_kv(exec, rd); };
  h.after_step = [&rd, kv](runtime::Executor& exec, std::size_t i) {
    return check_resident_step(exec, rd, i, rd.prefill ? kv.get() : nullptr);
  };
  return h;
}

}  // namespace wafersim::platforms::inference

#include "models/resident/kernel_decode_attention.h"

#include <fmt/format.h>

#include <cmath>

#include "hw/numerics/softfloat.h"
#include "models/compiler/kernels.h"
#include "models/compiler/program_builder.h"
#include "sim/errors.h"

namespace wafersim::models::resident {
using compiler::FeatureMap;
using compiler::LayerProgram;
using compiler::VOperand;
using hw::DType;
using hw::isa::Cond;
using hw::isa::Op;
using V = VOperand;

compiler::Tensor kv_cache_tensor(const std::string& name, const compiler::StreamingLayout& l, std::uint32_t kv_heads,
                                 std::uint64_t hd, std::uint64_t capacity, hw::DType dt) {
  compiler::Tensor t;
  t.name = name;
  t.features = std::uint64_t{kv_heads} * hd * capacity;
  t.map = FeatureMap::heads(t.features, l.slices(), kv_heads);
  t.dtype = dt;
  t.bytes = static_cast<std::uint32_t>(t.map.max_count() * l.tokens_per_pe * hw::size_of(dt));
  return t;
}

LayerProgram lower_decode_attention(compiler::KernelContext& ctx, const DecodeAttentionArgs& a) {
  const compiler::StreamingLayout& l = ctx.layout;
  const DType dt = ctx.dtype;
  const std::uint32_t esz = hw::size_of(dt);
  const std::uint64_t hd = a.head_dim, S = a.capacity, group = a.heads / a.kv_heads, n = a.position + 1;
  if (l.tokens_per_pe != 1 || l.columns != l.tokens)
    throw sim::InputError(
        fmt::format("layer '{}': a decode step needs one token per column ({} per PE over {} columns)", a.layer,
                    l.tokens_per_pe, l.columns));
  if (a.position >= S)
    throw sim::InputError(
        fmt::format("layer '{}': token {} does not fit the KV cache of {} keys", a.layer, a.position, S));
  const auto& T = ctx.tensors;
  const compiler::Tensor &q = T.at(a.q), &k = T.at(a.k), &v = T.at(a.v), &out = T.at(a.out);
  const compiler::Tensor &kc = T.at(a.k_cache), &vc = T.at(a.v_cache);

  LayerProgram p;
  p.layer = a.layer;
  p.kind = LayerKind::Attention;
  p.phase = compiler::Phase::Forward;
  p.reads = {a.q, a.k, a.v, a.k_cache, a.v_cache};
  p.writes = {a.out, a.k_cache, a.v_cache};
  const std::uint32_t sc = ctx.scratch("scores", S * 4);
  const std::uint32_t scale = hw::numerics::from_double(DType::F32, 1.0 / std::sqrt(static_cast<double>(hd)));

  std::vector<std::uint64_t> sram(l.slices());
  compiler::Work& w = p.work;
  for (std::uint32_t s = 0; s < l.slices(); ++s) {
    std::uint64_t ng = 0;
    for (std::uint32_t g = 0; g < a.kv_heads; ++g) ng += kc.map.slice_of_group(g) == s;
    sram[s] = (2 * ng * group * hd + 2 * ng * hd) * esz + ng * hd * S * (esz + 4) + S * 4;
    // Instructions of the main thread: appends, then per head the score loop, the softmax
    // and the output chains.
    const std::uint64_t issue = 2 * ng + ng * group * (4 + 8 * n + 11 + 5 * hd) + 2;
    w.issue = std::max(w.issue, issue);
  }
  w.flops = l.tokens * (4 * std::uint64_t{a.heads} * n * hd + 5 * std::uint64_t{a.heads} * n);
  compiler::finish_layer(ctx, p, sram);
  p.colors = 0;
  if (!ctx.emit) return p;

  for (std::uint32_t s = 0; s < l.slices(); ++s) {
    std::vector<std::uint32_t> groups;
    for (std::uint32_t g = 0; g < a.kv_heads; ++g)
      if (kc.map.slice_of_group(g) == s) groups.push_back(g);
    compiler::ProgramBuilder b(fmt::format("{}.decode{}.r{}", a.layer, a.position, s));
    const unsigned kdst = b.mem("kdst", dt, kc.addr, static_cast<std::uint32_t>(hd), static_cast<std::int32_t>(S));
    const unsigned vdst =
        b.mem("vdst", DType::F32, vc.addr, static_cast<std::uint32_t>(hd), static_cast<std::int32_t>(S));
    const unsigned ksrc = b.mem("ksrc", dt, k.addr, static_cast<std::uint32_t>(hd));
    const unsigned vsrc = b.mem("vsrc", dt, v.addr, static_cast<std::uint32_t>(hd));
    const unsigned qv = b.mem("q", dt, q.addr, static_cast<std::uint32_t>(hd));
    const unsigned kv = b.mem("k", dt, kc.addr, static_cast<std::uint32_t>(hd), static_cast<std::int32_t>(S));
    const unsigned scd = b.mem("scores", DType::F32, sc, static_cast<std::uint32_t>(n));
    const unsigned vv = b.mem("v", DType::F32, vc.addr, static_cast<std::uint32_t>(n));
    b.entry(b.task("main"));
    b.movf(10, DType::F32, scale);
    for (std::size_t lg = 0; lg < groups.size(); ++lg) {
      // Append the token's key and value (widened once) at `position`.
      const std::uint64_t c0 = lg * hd * S + a.position;
      b.dsd(Op::DsdBase, kdst, static_cast<std::int64_t>(kc.addr + c0 * esz));
      b.dsd(Op::DsdBase, ksrc, static_cast<std::int64_t>(k.addr + lg * hd * esz));
      b.vop(Op::FMov, dt, dt, V::d(kdst), V::d(ksrc));
      b.dsd(Op::DsdBase, vdst, static_cast<std::int64_t>(vc.addr + c0 * 4));
      b.dsd(Op::DsdBase, vsrc, static_cast<std::int64_t>(v.addr + lg * hd * esz));
      b.vop(Op::FCvt, DType::F32, dt, V::d(vdst), V::d(vsrc));
    }
    for (std::size_t lg = 0; lg < groups.size(); ++lg)
      for (std::uint64_t hh = 0; hh < group; ++hh) {
        const std::uint64_t qp = (lg * group + hh) * hd;
        // s_j = (q . k_j) x scale over the cached keys and the new one, in key order.
        b.dsd(Op::DsdBase, qv, static_cast<std::int64_t>(q.addr + qp * esz));
        b.dsd(Op::DsdBase, kv, static_cast<std::int64_t>(kc.addr + lg * hd * S * esz));
        b.mov(6, sc);
        b.mov(1, static_cast<std::int64_t>(n));
        const unsigned loop = b.label();
        b.bind(loop);
        b.mov(5, 0);
        b.reduce(Op::FDot, DType::F32, dt, 5, V::d(qv), V::d(kv));
        b.fscalar(Op::FMul, DType::F32, 5, 5, 10);
        b.st(0, 5, 4, 6);
        b.alu(Op::Add, 6, 6, 4);
        b.dsd(Op::DsdAdd, kv, 1);
        b.alu(Op::Sub, 1, 1, 1);
        b.branch(Cond::Ne, 1, 0, loop);
        // p = exp(s - max) x 1/(sum in key order).
        b.dsd(Op::DsdBase, scd, sc);
        b.dsd(Op::DsdLen, scd, static_cast<std::int64_t>(n));
        b.movf(7, DType::F32, 0xFF800000u);
        b.reduce(Op::FRMax, DType::F32, DType::F32, 7, V::d(scd));
        b.vop(Op::FSub, DType::F32, DType::F32, V::d(scd), V::d(scd), V::r(7));
        b.vop(Op::FExp, DType::F32, DType::F32, V::d(scd), V::d(scd));
        b.mov(8, 0);
        b.reduce(Op::FSum, DType::F32, DType::F32, 8, V::d(scd));
        b.fscalar(Op::FRecip, DType::F32, 8, 8);
        b.vop(Op::FMul, DType::F32, DType::F32, V::d(scd), V::d(scd), V::r(8));
        // out[d] = R(chain over keys of p_j v_j[d]).
        for (std::uint64_t d = 0; d < hd; ++d) {
          b.dsd(Op::DsdBase, vv, static_cast<std::int64_t>(vc.addr + (lg * hd * S + d * S) * 4));
          b.mov(9, 0);
          b.reduce(Op::FDot, DType::F32, DType::F32, 9, V::d(scd), V::d(vv));
          b.fcvt_scalar(dt, DType::F32, 9, 9);
          b.st(static_cast<std::uint32_t>(out.addr + (qp + d) * esz), 9, esz);
        }
      }
    b.ret();
    compiler::place_on_row(p, l, s, b.finish());
  }
  return p;
}

LayerProgram lower_kv_cache_fill(compiler::KernelContext& ctx, const KvCacheFillArgs& a) {
  const compiler::StreamingLayout& l = ctx.layout;
  const DType dt = ctx.dtype;
  const std::uint32_t esz = hw::size_of(dt);
  const std::uint64_t hd = a.head_dim, S = a.capacity, P = a.prompt;
  if (l.tokens_per_pe != 1 || l.columns != l.tokens)
    throw sim::InputError(
        fmt::format("layer '{}': filling the KV cache needs one token per column ({} per PE over {} columns)", a.layer,
                    l.tokens_per_pe, l.columns));
  if (P == 0 || P > S)
    throw sim::InputError(
        fmt::format("layer '{}': a prompt of {} tokens does not fit the KV cache of {} keys", a.layer, P, S));
  const auto& T = ctx.tensors;
  const compiler::Tensor &k = T.at(a.k), &v = T.at(a.v), &kc = T.at(a.k_cache), &vc = T.at(a.v_cache);

  LayerProgram p;
  p.layer = a.layer;
  p.kind = LayerKind::Attention;
  p.phase = compiler::Phase::Forward;
  p.reads = {a.k, a.v};
  p.writes = {a.k_cache, a.v_cache};
  std::vector<std::uint64_t> sram(l.slices());
  compiler::Work& w = p.work;
  const std::uint64_t steps_k = (P + ctx.target.lanes(dt) - 1) / ctx.target.lanes(dt);
  const std::uint64_t steps_v = (P + ctx.target.lanes(DType::F32) - 1) / ctx.target.lanes(DType::F32);
  for (std::uint32_t s = 0; s < l.slices(); ++s) {
    std::uint64_t ng = 0;
    for (std::uint32_t g = 0; g < a.kv_heads; ++g) ng += kc.map.slice_of_group(g) == s;
    sram[s] = ng * hd * (2 * P * esz + S * (esz + 4));
    // Per element: two moves, four pointer steps, the count and the branch.
    w.issue = std::max(w.issue, ng ? 8 * ng * hd + 7 : 1);
    w.datapath_steps = std::max(w.datapath_steps, ng * hd * (steps_k + steps_v));
  }
  compiler::finish_layer(ctx, p, sram);
  p.colors = 0;
  if (!ctx.emit) return p;

  for (std::uint32_t s = 0; s < l.slices(); ++s) {
    std::uint64_t ng = 0;
    for (std::uint32_t g = 0; g < a.kv_heads; ++g) ng += kc.map.slice_of_group(g) == s;
    compiler::ProgramBuilder b(fmt::format("{}.r{}", a.layer, s));
    b.entry(b.task("main"));
    if (ng) {
      const auto n = static_cast<std::uint32_t>(P);
      const unsigned kdst = b.mem("kdst", dt, kc.addr, n);
      const unsigned ksrc = b.mem("ksrc", dt, k.addr, n);
      const unsigned vdst = b.mem("vdst", DType::F32, vc.addr, n);
      const unsigned vsrc = b.mem("vsrc", dt, v.addr, n);
      b.mov(1, static_cast<std::int64_t>(ng * hd));
      const unsigned loop = b.label();
      b.bind(loop);
      b.vop(Op::FMov, dt, dt, V::d(kdst), V::d(ksrc));
      b.vop(Op::FCvt, DType::F32, dt, V::d(vdst), V::d(vsrc));
      b.dsd(Op::DsdAdd, kdst, static_cast<std::int64_t>(S));
      b.dsd(Op::DsdAdd, ksrc, static_cast<std::int64_t>(P));
      b.dsd(Op::DsdAdd, vdst, static_cast<std::int64_t>(S));
      b.dsd(Op::DsdAdd, vsrc, static_cast<std::int64_t>(P));
      b.alu(Op::Sub, 1, 1, 1);
      b.branch(Cond::Ne, 1, 0, loop);
    }
    b.ret();
    compiler::place_on_row(p, l, s, b.finish());
  }
  return p;
}

}  // namespace wafersim::models::resident

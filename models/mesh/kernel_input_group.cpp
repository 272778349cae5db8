// The prefill's input on the wafer that holds the embedding (docs/compiler.md, "Prefill"):
// the decode's embedding, first RMSNorm and a copy into q/k/v's block for every token of a
// group at once, each token's values bit for bit the decode kernels' (kernel_embedding.cpp,
// kernel_norm.cpp): a reduction of n values per PE is the same tree element by element, so
// reducing a group's values at once gives each token's sums as its own reduction does.

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "hw/numerics/softfloat.h"
#include "models/compiler/compiled_model.h"
#include "models/compiler/program_builder.h"
#include "models/mesh/kernel_common.h"
#include "models/mesh/kernels.h"
#include "models/mesh/mesh_plan.h"
#include "models/mesh/prefill_group.h"

namespace wafersim::models::mesh {
using compiler::ProgramBuilder;
using compiler::VOperand;
using hw::DType;
using hw::isa::Op;

MeshStep embedding_group_step(const MeshLayout& l, const compiler::Target& t, const std::vector<std::uint64_t>& prompt,
                              PromptChunk chunk, std::uint32_t group, std::uint64_t first, std::uint32_t count,
                              bool code) {
  if (!l.embedding()) throw std::logic_error("embedding_group_step: the layout holds no embedding");
  if (chunk.end() > prompt.size()) throw std::logic_error("embedding_group_step: a chunk beyond the prompt");
  const PrefillGroup g = prefill_group_of(l, t.sram_bytes(), chunk, group, first, count, "embedding_group_step");
  for (std::uint32_t i = 0; i < count; ++i)
    if (prompt[first + i] >= l.shape().vocabulary)
      throw std::logic_error("embedding_group_step: a token beyond the vocabulary");
  const Addrs& a = l.addrs();
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  const LineFamily& f = l.columns();
  MeshStep step;
  step.name = "prefill.embed";
  step.kernel = "embedding";
  auto owns = [&](std::uint32_t r, std::uint32_t i) {
    const compiler::Span v = l.row_vocab(r);
    return prompt[first + i] >= v.lo && prompt[first + i] < v.hi;
  };
  auto features = [&](std::uint32_t c) { return static_cast<std::uint32_t>(l.col_features(c).size()); };
  build_programs(
      step, l.region().rows, l.region().columns,
      [&](std::uint32_t r) {
        std::string key = role_key(f.role(r));
        for (std::uint32_t i = 0; i < count; ++i)
          if (owns(r, i)) key += fmt::format("|{}:{}", i, prompt[first + i] - l.row_vocab(r).lo);
        return key;
      },
      [&](std::uint32_t c) { return fmt::format("k{}", features(c)); },
      [&](std::uint32_t r, std::uint32_t c) {
        const std::uint32_t k = features(c);
        ProgramBuilder b(fmt::format("{}[{},{}]", step.name, r, c));
        b.entry(b.task("main"));
        if (!k) {
          b.ret();
          return b.finish();
        }
        b.movf(14, DType::F32, 0x80000000u);  // -0: adds nothing
        // The tokens this row holds widen their rows; runs of the others give -0.
        std::uint32_t none = 0;
        auto flush = [&](std::uint32_t end) {
          if (none < end)
            b.vop(
                Op::FMov, DType::F32, DType::F32,
                VOperand::d(b.mem(fmt::format("none{}", none), DType::F32, g.ga.sums + none * k * 4, (end - none) * k)),
                VOperand::r(14));
        };
        for (std::uint32_t i = 0; i < count; ++i) {
          if (!owns(r, i)) continue;
          flush(i);
          none = i + 1;
          const std::uint64_t row = prompt[first + i] - l.row_vocab(r).lo;
          b.vop(Op::FCvt, DType::F32, dt,
                VOperand::d(b.mem(fmt::format("sum{}", i), DType::F32, g.ga.sums + i * k * 4, k)),
                VOperand::d(b.mem(fmt::format("row{}", i), dt,
                                  static_cast<std::uint32_t>(a.emb + row * l.kc_max * l.esize()), k)));
        }
        flush(count);
        const LineRole role = f.role(r);
        emit_reduce_round_broadcast(b, f, role, g.ga.sums, g.ga.qkv, count * k, dt, "ar", "x");
        b.ret();
        return b.finish();
      },
      code);
  std::uint64_t latency = 0;
  const std::uint64_t n = std::uint64_t{count} * l.kc_max;
  add_vector(step.work, t, n, 4, 1, t.lanes(dt));
  add_allreduce(step.work, latency, f, n, t);
  add_vector(step.work, t, n, 4, 1, t.lanes(dt));
  step.bound = bound_of(step.work, latency, t);
  return step;
}

MeshStep rmsnorm_group_step(const MeshLayout& l, const compiler::Target& t, PromptChunk chunk, std::uint32_t group,
                            std::uint64_t first, std::uint32_t count, bool code) {
  const PrefillGroup g = prefill_group_of(l, t.sram_bytes(), chunk, group, first, count, "rmsnorm_group_step");
  const Addrs& a = l.addrs();
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  const std::uint32_t e = l.esize();
  const std::uint32_t inv_d = hw::numerics::from_double(DType::F32, 1.0 / static_cast<double>(l.shape().d));
  const std::uint32_t eps = hw::numerics::from_double(DType::F32, l.shape().epsilon);
  const LineFamily& f = l.rows();
  MeshStep step;
  step.name = "prefill.h0.ln1";
  step.kernel = "rmsnorm";
  auto features = [&](std::uint32_t c) { return static_cast<std::uint32_t>(l.col_features(c).size()); };
  // The rstd values spread over the row when the root's serial ones (24 scalar steps a token)
  // would take longer than the gather and the second broadcast add (the tree's hops twice,
  // its stages, the values).
  const std::uint32_t share = (count + f.length - 1) / f.length;
  const std::uint64_t extra =
      2ull * f.max_hops() * t.fabric.hop_latency.count() + std::uint64_t{f.max_stages()} * collective_stage(t) + count;
  const bool spread = 24ull * (count - share) > extra;
  build_programs(
      step, l.region().rows, l.region().columns, [](std::uint32_t) { return std::string(); },
      [&](std::uint32_t c) {
        return fmt::format("k{}{}|{}", features(c), role_key(f.role(c)),
                           spread ? gather_plan(f, c, count).key() : std::string());
      },
      [&](std::uint32_t, std::uint32_t c) {
        const std::uint32_t k = features(c);
        ProgramBuilder b(fmt::format("{}[{}]", step.name, c));
        b.entry(b.task("main"));
        // Each token's sum of squares over the column's features: one fp32 chain in order.
        for (std::uint32_t i = 0; i < count; ++i) {
          b.movf(2, DType::F32, 0);
          if (k) {
            const unsigned x = b.mem(fmt::format("x{}", i), dt, g.ga.qkv + i * k * e, k);
            b.reduce(Op::FDot, DType::F32, dt, 2, VOperand::d(x), VOperand::d(x));
          }
          b.st(g.ga.mx + i * 4, 2);
        }
        // The sums reduced along the row; the root takes every token's rstd, or (spread) the
        // sums allreduced and each PE takes the rstd of its share of the tokens, gathered to
        // the root. The root broadcasts them all.
        const LineRole role = f.role(c);
        if (spread) {
          emit_allreduce(b, f, role, g.ga.mx, count, Op::FAdd, "ar");
        } else {
          emit_reduce(b, f, role, g.ga.mx, count, Op::FAdd, "ar");
        }
        // The tokens whose rstd this PE takes: its share, or at the root (not spread) all.
        const std::uint32_t lo = spread ? gather_plan(f, c, count).lo : 0;
        const std::uint32_t hi = spread ? gather_plan(f, c, count).hi : role.root() ? count : 0;
        for (std::uint32_t i = lo; i < hi; ++i) {
          b.ld(4, g.ga.mx + i * 4);
          emit_rstd(b, inv_d, eps);
          b.st(g.ga.mx + i * 4, 5);
        }
        if (spread) {
          const std::uint8_t scale = b.declare_task("scale");
          emit_gather(b, f, c, g.ga.mx, count, 1, scale, 1, "rg");
          b.start(scale);
        }
        emit_broadcast(b, f, role, g.ga.mx, count, DType::F32, "rstd");
        if (k) {
          const unsigned gamma = b.mem("gamma", DType::F32, a.layers[0].g1, k);
          for (std::uint32_t i = 0; i < count; ++i) {
            const unsigned x = b.mem(fmt::format("in{}", i), dt, g.ga.qkv + i * k * e, k);
            const unsigned xw = b.mem(fmt::format("xw{}", i), DType::F32, g.ga.sums + i * k * 4, k);
            const unsigned y = b.mem(fmt::format("y{}", i), dt, g.ga.att + i * k * e, k);
            b.ld(5, g.ga.mx + i * 4);
            emit_rmsnorm_scale(b, dt, x, xw, gamma, y, 5);
          }
        }
        b.ret();
        return b.finish();
      },
      code);
  const std::uint64_t k = l.kc_max;
  std::uint64_t latency = 0;
  step.work.datapath_steps += count * k;                // the sums of squares, one element a step
  step.work.issue += 24ull * (spread ? share : count);  // rstd's scalar steps
  add_allreduce(step.work, latency, f, count, t);
  if (spread && f.max_hops()) {  // the rstd values' broadcast from the root
    step.work.ramp_in += count;
    latency += std::uint64_t{f.max_hops()} * t.fabric.hop_latency.count() + count - 1;
  }
  for (std::uint32_t i = 0; i < count; ++i) {
    add_vector(step.work, t, k, 4, 1, t.lanes(dt));
    add_vector(step.work, t, k, 4, 1, t.lanes(DType::F32));
    add_vector(step.work, t, k, 4, 2, t.lanes(DType::F32));
    add_vector(step.work, t, k, 4, 1, t.lanes(dt));
  }
  step.work.flops = 4 * l.shape().d * count;
  step.bound = bound_of(step.work, latency + 24, t);
  return step;
}

}  // namespace wafersim::models::mesh

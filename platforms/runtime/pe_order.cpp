#include "platforms/runtime/pe_order.h"

#include "hw/numerics/softfloat.h"

namespace wafersim::platforms::runtime {
using hw::DType;
using models::compiler::Accumulate;
namespace nm = hw::numerics;

Bits expect_matmul(const models::compiler::CompiledModel& cm, const Bits& in,
                   const models::compiler::FeatureMap& in_map, const models::compiler::FeatureMap& out_map,
                   const WeightView& w, const Bits* bias, const Bits* existing) {
  const std::uint64_t f_in = in_map.features, f_out = out_map.features;
  const auto& l = cm.layout;
  const DType dt = cm.dtype();
  const DType acc = cm.options.accumulate == Accumulate::Fp32 ? DType::F32 : dt;
  const std::uint32_t G = l.slices();
  const std::uint64_t M = l.tokens;
  auto widen = [&](std::uint32_t v) { return acc == dt ? v : nm::convert(acc, dt, v); };
  Bits out(M * f_out);
  std::vector<std::uint32_t> part(G);
  for (std::uint64_t m = 0; m < M; ++m)
    for (std::uint64_t o = 0; o < f_out; ++o) {
      for (std::uint32_t s = 0; s < G; ++s) {
        std::uint32_t p = 0;
        for (const models::compiler::Span& A : in_map.runs(s))
          for (std::uint64_t f = A.lo; f < A.hi; ++f) p = nm::fma(acc, widen(in[m * f_in + f]), widen(w.at(f, o)), p);
        part[s] = p;
      }
      const std::uint32_t j = out_map.owner(o);
      std::uint32_t r = part[j];
      if (j > 0) {
        std::uint32_t south = part[0];
        for (std::uint32_t s = 1; s < j; ++s) south = nm::add(acc, south, part[s]);
        r = nm::add(acc, r, south);
      }
      if (j + 1 < G) {
        std::uint32_t north = part[G - 1];
        for (std::uint32_t s = G - 1; s-- > j + 1;) north = nm::add(acc, north, part[s]);
        r = nm::add(acc, r, north);
      }
      if (bias) r = nm::add(acc, r, widen((*bias)[o]));
      if (acc != dt) {
        if (existing) r = nm::add(acc, r, widen((*existing)[m * f_out + o]));
        r = nm::convert(dt, acc, r);
      } else if (existing) {
        r = nm::add(dt, (*existing)[m * f_out + o], r);
      }
      out[m * f_out + o] = r;
    }
  return out;
}

WeightGrad expect_weight_grad(const models::compiler::CompiledModel& cm, const Bits& x, const Bits& dy,
                              std::uint64_t f_in, std::uint64_t f_out, bool bias) {
  const auto& l = cm.layout;
  const DType dt = cm.dtype();
  const std::uint32_t C = l.columns, t = l.tokens_per_pe;
  auto w32 = [&](std::uint32_t v) { return dt == DType::F32 ? v : nm::convert(DType::F32, dt, v); };
  // Per group: each column's chain over its tokens, the columns summed west to east; the
  // groups' sums added in group order by the host.
  auto total = [&](auto&& column) {
    std::uint32_t all = 0;
    for (std::uint32_t grp = 0; grp < l.groups; ++grp) {
      std::uint32_t sum = 0;
      for (std::uint32_t c = 0; c < C; ++c) {
        const std::uint32_t p = column(std::uint64_t{grp} * C + c);
        sum = c == 0 ? p : nm::add(DType::F32, sum, p);
      }
      all = grp == 0 ? sum : nm::add(DType::F32, all, sum);
    }
    return all;
  };
  WeightGrad g;
  g.dw.assign(f_in * f_out, 0);
  for (std::uint64_t f = 0; f < f_in; ++f)
    for (std::uint64_t o = 0; o < f_out; ++o)
      g.dw[f * f_out + o] = total([&](std::uint64_t c) {
        std::uint32_t p = 0;
        for (std::uint32_t i = 0; i < t; ++i) {
          const std::uint64_t m = c * t + i;
          p = nm::fma(DType::F32, w32(x[m * f_in + f]), w32(dy[m * f_out + o]), p);
        }
        return p;
      });
  if (bias) {
    g.db.assign(f_out, 0);
    const std::uint32_t one = nm::from_double(DType::F32, 1.0);
    for (std::uint64_t o = 0; o < f_out; ++o)
      g.db[o] = total([&](std::uint64_t c) {
        std::uint32_t p = 0;
        for (std::uint32_t i = 0; i < t; ++i) p = nm::fma(DType::F32, w32(dy[(c * t + i) * f_out + o]), one, p);
        return p;
      });
  }
  return g;
}

}  // namespace wafersim::platforms::runtime

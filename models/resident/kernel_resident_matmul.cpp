// The matrix product with resident weights: the row programs of compiler::lower_matmul
// (compiler::matmul_row_program) with each weight loaded from SRAM (`ld` through a pointer
// register) where the streamed kernel receives it, or, with few tokens per PE, vector FMACs
// over the outputs with the weights as the vector operand; per element the same accumulation
// order, chains and rounding.

#include "models/resident/kernel_resident_matmul.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "models/compiler/chunk_loop.h"
#include "models/compiler/kernels.h"
#include "models/compiler/matmul_program.h"

namespace wafersim::models::resident {
using compiler::align8;
using compiler::ceil_div;
using compiler::KernelContext;
using compiler::LayerProgram;
using compiler::MatmulArgs;
using compiler::Span;
using compiler::words;
using compiler::Work;
using hw::DType;

std::uint32_t resident_weight_bytes(const compiler::StreamingLayout& l, const compiler::FeatureMap& in,
                                    const compiler::FeatureMap& out, std::uint64_t f_out, bool bias, hw::DType dt) {
  const std::uint32_t esz = hw::size_of(dt);
  std::uint64_t most = 0;
  for (std::uint32_t s = 0; s < l.slices(); ++s) most = std::max(most, in.count(s));
  return static_cast<std::uint32_t>(align8(most * f_out * esz) + (bias ? align8(out.max_count() * esz) : 0));
}

SliceImage resident_slice_image(const MatmulArgs& m, const compiler::FeatureMap& Am, const compiler::FeatureMap& Om,
                                std::uint32_t G, std::uint32_t s) {
  SliceImage img;
  for (std::uint32_t j = 0; j < G; ++j)
    for (const Span& ra : Am.runs(s))
      for (const Span& ro : Om.runs(j))
        for (std::uint64_t f = ra.lo; f < ra.hi; ++f)
          for (std::uint64_t o = ro.lo; o < ro.hi; ++o)
            img.weights.push_back(m.weight_base + f * static_cast<std::uint64_t>(m.sf) +
                                  o * static_cast<std::uint64_t>(m.so));
  if (m.bias >= 0)
    for (const Span& o : Om.runs(s))
      for (std::uint64_t k = o.lo; k < o.hi; ++k) img.bias.push_back(k);
  return img;
}

LayerProgram lower_resident_matmul(KernelContext& ctx, const MatmulArgs& m, const ResidentWeights& rw) {
  const compiler::StreamingLayout& l = ctx.layout;
  const std::uint32_t G = l.slices(), t = l.tokens_per_pe;
  const DType dt = ctx.dtype;
  const DType acc = ctx.accumulate == compiler::Accumulate::Fp32 ? DType::F32 : dt;
  const std::uint32_t esz = hw::size_of(dt), asz = hw::size_of(acc);
  const compiler::FeatureMap& Am = ctx.tensors.at(m.in).map;
  const compiler::FeatureMap& Om = ctx.tensors.at(m.out).map;
  const std::uint64_t cmax = Om.max_count();
  const std::uint32_t lanes_dt = ctx.target.lanes(dt), lanes_acc = ctx.target.lanes(acc);
  const bool fp32_acc = acc != dt;
  if (m.phase != compiler::Phase::Forward || m.accumulate_out)
    throw std::logic_error("lower_resident_matmul: forward products only");

  LayerProgram p;
  p.layer = m.layer;
  p.kind = m.kind;
  p.phase = m.phase;
  p.reads = {m.in};
  p.writes = {m.out};

  // Few tokens per PE (decode, small batches): vectors over the outputs rather than the tokens.
  const bool gemv = 7 * std::uint64_t{t} < 3 * cmax;
  const std::uint64_t pbytes = std::uint64_t{t} * cmax * asz;
  const std::uint32_t P[2] = {ctx.scratch("partials0", pbytes, 16), ctx.scratch("partials1", pbytes, 16)};
  const bool bias = m.bias >= 0;
  const std::uint32_t bbuf = bias ? ctx.scratch("bias", cmax * esz) : 0;
  const std::uint32_t b32 = bias && fp32_acc ? ctx.scratch("bias32", cmax * 4) : 0;
  const std::uint32_t tbytes = compiler::chunk_table_bytes(G);
  const std::uint32_t table = tbytes ? ctx.scratch("chunk_table", tbytes) : 0;
  const std::uint64_t scratch_bytes = 2 * pbytes + (bias ? cmax * esz + (fp32_acc ? cmax * 4 : 0) : 0) + tbytes;

  std::vector<std::uint64_t> oc(G);
  for (std::uint32_t j = 0; j < G; ++j) oc[j] = Om.count(j);
  std::vector<std::uint64_t> sram(G);
  Work& w = p.work;
  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint64_t a = Am.count(s), cs = oc[s];
    sram[s] = (a + cs) * t * esz + scratch_bytes + rw.bytes;
    Work k;
    if (gemv) {
      // Per token and input feature, one vector FMAC over each output run of a chunk, the
      // input element loaded as the scalar.
      for (std::uint32_t j = 0; j < G; ++j)
        for (const Span& ro : Om.runs(j)) {
          const std::uint64_t n = ro.size();
          k.datapath_steps += std::uint64_t{t} * a * ceil_div(n, lanes_dt);
          k.sram_reads += std::uint64_t{t} * a * (words(n * esz) + words(n * asz) + 1);
          k.sram_writes += std::uint64_t{t} * a * words(n * asz);
          k.issue += std::uint64_t{t} * a * 6 + 4;
        }
    } else {
      k.datapath_steps = a * m.f_out * ceil_div(t, lanes_dt);
      // Every weight is one scalar load (a port access) besides the vector reads and writes.
      k.sram_reads = a * m.f_out * (words(std::uint64_t{t} * asz) + words(std::uint64_t{t} * esz) + 1);
      k.sram_writes = a * m.f_out * words(std::uint64_t{t} * asz);
      k.issue = 3 * a * m.f_out;
    }
    for (std::uint32_t j = 0; j < G; ++j) {
      const std::uint64_t cj = oc[j], n = std::uint64_t{t} * cj;
      if (cj == 0) continue;
      k.sram_writes += words(n * asz);
      const bool from_north = s > 0 && j >= s, from_south = s + 1 < G && j <= s;
      if (j != s) {
        k.ramp_out += n;
        if ((j > s && s > 0) || (j < s && s + 1 < G)) {
          k.ramp_in += n;
          k.datapath_steps += n;
        }
        k.sram_reads += words(n * asz);
        continue;
      }
      const std::uint64_t inputs = (from_north ? 1 : 0) + (from_south ? 1 : 0);
      k.ramp_in += inputs * n;
      k.datapath_steps += inputs * n;
      if (bias) k.datapath_steps += cj * ceil_div(t, lanes_acc);
      if (fp32_acc) k.datapath_steps += ceil_div(n, lanes_dt);
      k.sram_writes += words(n * esz);
    }
    k.issue += 2 * G;
    w.datapath_steps = std::max(w.datapath_steps, k.datapath_steps);
    w.sram_reads = std::max(w.sram_reads, k.sram_reads);
    w.sram_writes = std::max(w.sram_writes, k.sram_writes);
    w.ramp_in = std::max(w.ramp_in, k.ramp_in);
    w.ramp_out = std::max(w.ramp_out, k.ramp_out);
    w.issue = std::max(w.issue, k.issue);
  }
  for (std::uint32_t s = 0; s + 1 < G; ++s) {
    std::uint64_t south = 0, north = 0;
    for (std::uint32_t j = 0; j < G; ++j) (j > s ? south : north) += std::uint64_t{t} * oc[j];
    w.link = std::max({w.link, south, north});
  }
  w.flops = 2 * l.tokens * m.f_in * m.f_out + (bias ? l.tokens * m.f_out : 0);
  compiler::finish_layer(ctx, p, sram);
  p.colors = 4;  // the column chains; no weight colors

  if (!ctx.emit) return p;
  compiler::MatmulWeights src;
  src.source = compiler::MatmulWeights::Source::Resident;
  src.addr = rw.addr;
  src.bias_addr = rw.bias_addr;
  src.gemv = gemv;
  const compiler::MatmulScratch buf{{P[0], P[1]}, bbuf, b32, 0, table};
  for (std::uint32_t s = 0; s < G; ++s) {
    compiler::place_on_row(
        p, l, s, compiler::matmul_row_program(ctx, m, buf, src, s, fmt::format("{}.resident.r{}", m.layer, s)));
  }
  return p;
}

}  // namespace wafersim::models::resident

// Elementwise layers forward and backward: every PE runs the kind's vector sequence over its
// part of the tensors, nothing crosses the fabric (docs/compiler.md, "Elementwise").

#include <fmt/format.h>

#include <algorithm>

#include "hw/isa/opcodes.h"
#include "models/compiler/kernels.h"
#include "models/compiler/program_builder.h"
#include "sim/errors.h"

namespace wafersim::models::compiler {
using hw::isa::Op;
using V = VOperand;

LayerProgram lower_elementwise(KernelContext& ctx, const ElementwiseArgs& e) {
  const StreamingLayout& l = ctx.layout;
  const std::uint32_t G = l.slices(), t = l.tokens_per_pe;
  const hw::DType dt = ctx.dtype;
  const std::uint32_t esz = hw::size_of(dt);
  const EwProgram& prog = e.program;
  const FeatureMap& map = shared_map(ctx, e.layer, e.tensors, false);
  LayerProgram p;
  p.layer = e.layer;
  p.kind = e.kind;
  p.phase = e.phase;
  p.operands = e.tensors;
  p.accumulate = e.accumulate;
  const std::uint64_t nmax = map.max_count() * t;
  std::vector<std::uint32_t> addr;  // of every buffer of the program
  for (std::size_t i = 0; i < prog.buffers.size(); ++i) {
    if (i < e.tensors.size() && e.tensors[i] != kScratchTensor)
      addr.push_back(ctx.tensors.at(e.tensors[i]).addr);
    else
      addr.push_back(ctx.scratch(prog.buffers[i], nmax * esz, (i % 2) * 16));
  }

  const auto& lat = ctx.target.wafer.pe.latency;
  const std::uint32_t lanes = ctx.target.lanes(dt);
  std::vector<std::uint64_t> sram(G);
  Work& w = p.work;
  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint64_t n = map.count(s) * t;
    sram[s] = n * esz * (prog.buffers.size());
    Work k;
    for (const auto& o : prog.ops) {
      const bool iterative = o.op == Op::FExp || o.op == Op::FRecip;
      const std::uint64_t cyc = o.op == Op::FExp ? lat.exp.count() : lat.recip.count();
      if (o.op != Op::FMov) k.datapath_steps += iterative ? n * cyc : (n + lanes - 1) / lanes;
      int sources = 0;
      for (int x : {o.a, o.b, o.c}) sources += x >= 0 && (o.op == Op::FMac || x != o.c) ? 1 : 0;
      k.sram_reads += sources * ((n * esz + 7) / 8);
      k.sram_writes += (n * esz + 7) / 8;
      w.flops += map.count(s) * l.tokens_per_pe * l.columns * l.groups * hw::isa::info(o.op).flops;
    }
    k.issue = prog.ops.size() + prog.consts.size();
    w.datapath_steps = std::max(w.datapath_steps, k.datapath_steps);
    w.sram_reads = std::max(w.sram_reads, k.sram_reads);
    w.sram_writes = std::max(w.sram_writes, k.sram_writes);
    w.issue = std::max(w.issue, k.issue);
  }
  finish_layer(ctx, p, sram);
  if (!ctx.emit) return p;

  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint32_t n = static_cast<std::uint32_t>(map.count(s) * t);
    if (n == 0) continue;
    ProgramBuilder b(fmt::format("{}.{}.r{}", e.layer, to_string(e.phase), s));
    std::vector<unsigned> d;
    for (std::size_t i = 0; i < prog.buffers.size(); ++i) {
      d.push_back(b.mem(prog.buffers[i], dt, addr[i], n));
    }
    const std::uint8_t main = b.task("main");
    b.entry(main);
    emit_ew_ops(b, dt, prog, d);
    b.ret();
    place_on_row(p, l, s, b.finish());
  }
  return p;
}

}  // namespace wafersim::models::compiler

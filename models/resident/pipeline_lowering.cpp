// Every row of a stage runs one program: task `main` starts receiving the first token's input,
// task `token` runs once per token: it starts receiving the next token's input into the other
// buffer, computes the row's outputs by the stage's kind, applies the fused elementwise
// program, relays the outputs of the rows above and sends its own south (the bottom row east,
// to the next column; the last stage's rows store them), and sends the skip on.

#include "models/resident/pipeline_lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "models/compiler/kernels.h"
#include "models/compiler/sizes.h"
#include "models/resident/pipeline_routes.h"
#include "models/resident/resident_program.h"

namespace wafersim::models::resident {
using compiler::align8;
using hw::DType;
using hw::isa::Op;
using V = compiler::VOperand;

namespace {

StageRow row_of(const PipelineProgram& p, std::size_t i, const Frame& fr, const compiler::EwProgram& ew,
                std::size_t phase, std::uint32_t band, std::uint32_t y) {
  const PipelineStage& s = p.stages[i];
  StageRow r(p, i, fr, ew);
  r.dt = compiler::hw_dtype(p.model.dtype);
  r.esz = hw::size_of(r.dt);
  r.y = y;
  r.gy = band * s.rows + y;
  r.tokens = p.band_tokens(phase, band);
  r.first = i == 0;
  r.last = i + 1 == p.stages.size();
  r.place = phase == 0;
  r.rows_in = p.cut == PipelineCut::RowsIn;
  r.round = row_rounds(p.cut, s, y);
  r.sums_in = r.rows_in && y > 0;
  r.sums_out = r.rows_in && y + 1 < s.rows;
  r.carries = !r.last && y + 1 == s.rows && s.carry_out;
  r.o = row_outputs(p.cut, s, y);
  r.a = row_inputs(p.cut, s, y);
  r.c = static_cast<std::uint32_t>(r.o.size());
  r.above = static_cast<std::uint32_t>(r.rows_in ? 0 : r.o.lo);
  return r;
}

// The first stage's inputs of the band's tokens as the host loads them: activations, or token
// ids (each followed by its position with learned positions).
std::vector<std::uint8_t> first_inputs(const StageRow& r) {
  const PipelineStage& s = r.s;
  const bool ids = s.kind == StageKind::Embedding;
  std::vector<std::uint8_t> xb;
  for (const std::uint64_t m : r.tokens)
    for (std::uint64_t f = 0; f < s.f_in; ++f) {
      append_bits(xb, r.p.input[m * s.f_in + f], ids ? 4 : r.esz);
      if (ids && s.positions) append_bits(xb, static_cast<std::uint32_t>(m % r.p.positions), 4);
    }
  return xb;
}

RowDescriptors declare(compiler::ProgramBuilder& b, const StageRow& r) {
  const PipelineStage& s = r.s;
  const Frame& fr = r.fr;
  const DType dt = r.dt;
  const std::uint32_t c = r.c;
  RowDescriptors d;
  d.acc = b.mem("acc", DType::F32, fr.acc, c);
  d.biasd = b.mem("bias", DType::F32, fr.bias, c);
  d.wvec = b.mem("w", dt, fr.w, c);
  d.wcol = b.mem("wcol", dt, fr.w, static_cast<std::uint32_t>(s.f_in));
  d.xvec = b.mem("xvec", dt, fr.x, static_cast<std::uint32_t>(s.f_in));
  d.yd = b.mem("y", dt, fr.y, c);
  const bool gated = s.kind == StageKind::Gated;
  if (gated) d.yd2 = b.mem("y2", dt, fr.y2, c);
  if (!s.fused.empty()) {
    d.ewd.push_back(d.yd);
    if (gated) d.ewd.push_back(d.yd2);
    d.ewd.push_back(b.mem("fused", dt, fr.fused, c));
    for (std::uint32_t k = 0; k < r.ew.temporaries(); ++k)
      d.ewd.push_back(b.mem(r.ew.buffers[r.ew.inputs + r.ew.outputs + k], dt, fr.temps + k * align8(c * r.esz), c));
  }
  d.result = s.fused.empty() ? d.yd : d.ewd[r.ew.inputs];
  const auto f_recv = static_cast<std::uint32_t>(s.f_in + s.carry_in);
  const std::uint8_t relay = relay_color(r.stage, r.y);
  d.xbuf = b.mem("x", dt, fr.x, f_recv);
  if (!r.first) d.xin = b.fabin("x_in", dt, input_color(r.p, r.stage), f_recv);
  if (r.carries) {
    d.cout = b.fabout("carry_out", dt, relay, static_cast<std::uint32_t>(s.carry_out));
    d.cmem = b.mem("carry", dt, fr.x, static_cast<std::uint32_t>(s.carry_out));
  }
  if (r.last && r.round) d.outm = b.mem("out", dt, fr.out, c);
  if (r.sums_in) d.sin = b.fabin("sums_in", DType::F32, relay_color(r.stage, r.y - 1), c);
  if (r.sums_out) d.sout = b.fabout("sums_out", DType::F32, relay, c);
  if (!r.last && r.above) {
    d.rin = b.fabin("relay_in", dt, relay_color(r.stage, r.y - 1), r.above);
    d.rfwd = b.fabout("relay_fwd", dt, relay, r.above);
  }
  if (!r.last && r.round) d.rout = b.fabout("relay_out", dt, relay, c);
  return d;
}

// Task `main` starts the first receive; task `token` (r15: the tokens left) takes the input at
// r10 into r6 and, unless this is the last token, starts the next receive into the other
// buffer (its completion activates `token` again, which runs once this one has returned).
void emit_token_start(compiler::ProgramBuilder& b, const StageRow& r, const RowDescriptors& d) {
  const PipelineStage& s = r.s;
  const DType dt = r.dt;
  const std::uint32_t x0 = r.fr.x, x1 = r.fr.x + align8(std::uint64_t{s.f_in + s.carry_in} * r.esz);
  const std::uint8_t main = b.task("main");
  const std::uint8_t token = b.declare_task("token");
  const compiler::VectorOptions next{true, hw::isa::OnDone::Activate, token};
  b.entry(main);
  b.mov(15, static_cast<std::int64_t>(r.tokens.size()));
  b.mov(13, r.fr.out);
  b.mov(10, x0);
  if (r.first) {
    b.activate(token);
  } else {
    b.dsdr(Op::DsdBase, d.xbuf, 10);
    b.vop(Op::FMov, dt, dt, V::d(d.xbuf), V::d(d.xin), {}, {}, next);
  }
  b.ret();
  b.start(token);
  b.movr(6, 10);
  const unsigned no_more = b.label();
  b.branch(hw::isa::Cond::Eq, 15, 1, no_more);
  if (r.first) {
    b.alu(Op::Add, 10, 10, static_cast<std::int64_t>(s.f_in * first_input_bytes(s, dt)));
    b.activate(token);
  } else {
    b.mov(9, std::int64_t{x0} + x1);
    b.alur(Op::Sub, 10, 9, 10);
    b.dsdr(Op::DsdBase, d.xbuf, 10);
    b.vop(Op::FMov, dt, dt, V::d(d.xbuf), V::d(d.xin), {}, {}, next);
  }
  b.bind(no_more);
}

// After the kind's work: the fused program, then the outputs stored (last stage) or relayed
// after those of the rows above, the skip sent on, one token fewer.
void emit_token_end(compiler::ProgramBuilder& b, const StageRow& r, const RowDescriptors& d) {
  const DType dt = r.dt;
  if (r.round && !r.s.fused.empty()) compiler::emit_ew_ops(b, dt, r.ew, d.ewd);
  if (r.round && r.last) {
    b.dsdr(Op::DsdBase, d.outm, 13);
    b.vop(Op::FMov, dt, dt, V::d(d.outm), V::d(d.result));
    b.alu(Op::Add, 13, 13, std::int64_t{r.c} * r.esz);
  } else if (r.round) {
    if (r.above) b.vop(Op::FMov, dt, dt, V::d(d.rfwd), V::d(d.rin));
    b.vop(Op::FMov, dt, dt, V::d(d.rout), V::d(d.result));
  }
  if (r.carries) {
    b.alu(Op::Add, 7, 6, static_cast<std::int64_t>(r.s.carry_from * r.esz));
    b.dsdr(Op::DsdBase, d.cmem, 7);
    b.vop(Op::FMov, dt, dt, V::d(d.cout), V::d(d.cmem));
  }
  b.alu(Op::Sub, 15, 15, 1);
  b.ret();
}

hw::isa::Placement lower_row(const StageRow& r) {
  const StageLowering kind = lowering_of(r.s.kind);
  compiler::ProgramBuilder b(fmt::format("{}.pipeline.r{}", r.s.name, r.gy));
  kind.place(b, r);
  if (r.first) b.data(r.fr.x, first_inputs(r));
  const RowDescriptors d = declare(b, r);
  emit_token_start(b, r, d);
  kind.token(b, r, d);
  emit_token_end(b, r, d);
  hw::isa::Placement pl;
  pl.x0 = pl.x1 = static_cast<std::uint16_t>(r.s.x);
  pl.y0 = pl.y1 = static_cast<std::uint16_t>(r.gy);
  pl.program = b.finish();
  return pl;
}

}  // namespace

StageLowering lowering_of(StageKind k) {
  switch (k) {
    case StageKind::Linear:
    case StageKind::Gated:
    case StageKind::Qkv:
      return linear_lowering();
    case StageKind::RmsNorm:
    case StageKind::LayerNorm:
      return norm_lowering();
    case StageKind::Attention:
      return attention_lowering();
    case StageKind::Embedding:
      return embedding_lowering();
    case StageKind::Add:
      return add_lowering();
  }
  throw std::logic_error("pipeline: a stage of no kind");
}

void bound_stage(PipelineProgram& p, std::size_t i, std::uint32_t lanes) {
  PipelineStage& s = p.stages[i];
  const bool first = i == 0, last = i + 1 == p.stages.size(), rows_in = p.cut == PipelineCut::RowsIn;
  const StageLowering kind = lowering_of(s.kind);
  for (std::uint32_t y = 0; y < s.rows; ++y) {
    const compiler::Span o = row_outputs(p.cut, s, y);
    const std::uint64_t c = o.size(), above = rows_in ? 0 : o.lo;
    const bool sums_in = rows_in && y > 0, carries = !last && y + 1 == s.rows && s.carry_out;
    const std::uint64_t lat = kind.latency(p.cut, s, y, lanes);
    const std::uint64_t ramp_in = (first ? 0 : s.f_in + s.carry_in) + (last ? 0 : above) + (sums_in ? c : 0);
    const std::uint64_t ramp_out = ((last && row_rounds(p.cut, s, y)) ? 0 : above + c) + (carries ? s.carry_out : 0);
    s.latency_bound = std::max(s.latency_bound, lat);
    s.interval_bound = std::max({s.interval_bound, lat, ramp_in, ramp_out});
  }
}

void lower_stage(PipelineProgram& p, std::size_t i, const Frame& fr, const compiler::EwProgram& ew) {
  for (std::size_t ph = 0; ph < p.phases.size(); ++ph)
    for (std::uint32_t band = 0; band < p.replicas; ++band)
      for (std::uint32_t y = 0; y < p.stages[i].rows; ++y) {
        hw::isa::Placement pl = lower_row(row_of(p, i, fr, ew, ph, band, y));
        p.phases[ph].code.push_back(std::move(pl));
      }
}

}  // namespace wafersim::models::resident

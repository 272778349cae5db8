#include "models/mesh/kernel_common.h"

#include <fmt/format.h>

#include <algorithm>

#include "models/compiler/kernels.h"
#include "models/mesh/kernels.h"

namespace wafersim::models::mesh {

std::string role_key(const LineRole& r) {
  if (r.root()) return fmt::format("M{}{}", r.has_before ? 'b' : '-', r.has_after ? 'a' : '-');
  return fmt::format("{}{}{}{}{}{}{}", r.side == LineRole::Side::Before ? 'B' : 'A', r.distance % 2, r.group % 2,
                     r.group_root ? 'r' : '-', r.chain_start ? 's' : '-', r.outermost ? 'o' : '-',
                     // the broadcast passes on unless the PE ends its side
                     r.distance == 0 ? '-' : 'p');
}

void emit_ring_shift(compiler::ProgramBuilder& b, hw::DType type, std::uint32_t from, std::uint32_t to, std::uint32_t n,
                     std::uint8_t send_color, std::uint8_t recv_color, std::uint8_t then, const std::string& tag,
                     bool sends) {
  using compiler::VOperand;
  if (sends) b.block(then);
  compiler::VectorOptions o;
  o.async = true;
  o.ut = 1;
  o.on_done = hw::isa::OnDone::Activate;
  o.task = then;
  b.vop(hw::isa::Op::FMov, type, type, VOperand::d(b.mem(tag + "_in", type, to, n)),
        VOperand::d(b.fabin(tag + "_from_next", type, recv_color, n)), {}, {}, o);
  if (sends) {
    o.ut = 2;
    o.on_done = hw::isa::OnDone::Unblock;
    b.vop(hw::isa::Op::FMov, type, type, VOperand::d(b.fabout(tag + "_to_previous", type, send_color, n)),
          VOperand::d(b.mem(tag + "_out", type, from, n)), {}, {}, o);
  }
  b.ret();
}

void emit_rstd(compiler::ProgramBuilder& b, std::uint32_t inv_d, std::uint32_t eps) {
  b.movf(13, hw::DType::F32, inv_d);
  b.movf(14, hw::DType::F32, eps);
  b.movf(15, hw::DType::F32, 0x3F000000u);
  compiler::emit_rsqrt_registers(b);
}

void add_allreduce(compiler::Work& w, std::uint64_t& latency, const LineFamily& f, std::uint64_t n,
                   const compiler::Target& t) {
  if (n == 0 || f.max_hops() == 0) return;
  w.ramp_in += 3 * n;
  w.ramp_out += n;
  w.link += 2 * n;
  w.issue += 4;
  // Each value is read and written once per fadd it takes part in (two, at a group root).
  const std::uint64_t words = (4 * n + t.wafer.pe.sram.port_width.bits / 8 - 1) / (t.wafer.pe.sram.port_width.bits / 8);
  w.sram_reads += 2 * words;
  w.sram_writes += 2 * words;
  latency += 2 * std::uint64_t{f.max_hops()} * t.fabric.hop_latency.count() + (n - 1);
}

void add_fmacs(compiler::Work& w, const compiler::Target& t, std::uint64_t fmacs, std::uint64_t n) {
  if (!fmacs || !n) return;
  const std::uint64_t lanes = t.lanes(hw::DType::BF16);
  const std::uint64_t port = t.wafer.pe.sram.port_width.bits / 8;
  const std::uint64_t steps = (n + lanes - 1) / lanes;
  const std::uint64_t acc_words = (4 * lanes + port - 1) / port, in_words = (2 * lanes + port - 1) / port;
  w.datapath_steps += fmacs * steps;
  w.issue += 3 * fmacs;
  w.sram_reads += fmacs * steps * (acc_words + in_words) + fmacs;  // and the scalar load of the input
  w.sram_writes += fmacs * steps * acc_words;
}

void add_vector(compiler::Work& w, const compiler::Target& t, std::uint64_t n, std::uint32_t bytes,
                std::uint32_t sources, std::uint32_t lanes, std::uint32_t iterative) {
  if (!n) return;
  const std::uint64_t port = t.wafer.pe.sram.port_width.bits / 8;
  const std::uint64_t words = (n * bytes + port - 1) / port;
  w.datapath_steps += iterative ? n * iterative : (n + lanes - 1) / lanes;
  w.issue += 1;
  w.sram_reads += sources * words;
  w.sram_writes += words;
}

StepBound bound_of(const compiler::Work& w, std::uint64_t latency, const compiler::Target& t) {
  StepBound b;
  b.compute = std::max(w.datapath_steps, w.issue);
  const auto& s = t.wafer.pe.sram;
  b.sram =
      std::max((w.sram_reads + s.read_ports - 1) / s.read_ports, (w.sram_writes + s.write_ports - 1) / s.write_ports);
  b.fabric = std::max({w.ramp_in, w.ramp_out, w.link});
  b.edge = w.edge;
  b.latency = latency;
  return b;
}

bool starts_with(const MeshLayout& l, std::uint32_t r, std::uint32_t c, std::uint64_t j) {
  return (l.column_ring().position(r) + l.row_ring().position(c)) % l.gemm_n() == j;
}

bool ends_with(const MeshLayout& l, Gemv g, std::uint32_t r, std::uint32_t c, std::uint64_t j) {
  const std::uint32_t N = l.gemm_n(), a = l.column_ring().position(r), b = l.row_ring().position(c);
  const std::uint32_t line = reduces_along_rows(g) ? a : b, here = reduces_along_rows(g) ? b : a;
  const Ring& sums = reduces_along_rows(g) ? l.row_ring() : l.column_ring();
  return (here + line + N - 1) % N == j && sums.sends(reduces_along_rows(g) ? c : r);
}

void emit_rmsnorm_scale(compiler::ProgramBuilder& b, hw::DType type, unsigned x, unsigned xw, unsigned gamma,
                        unsigned y, unsigned rstd) {
  using compiler::VOperand;
  using hw::isa::Op;
  b.vop(Op::FCvt, hw::DType::F32, type, VOperand::d(xw), VOperand::d(x));
  b.vop(Op::FMul, hw::DType::F32, hw::DType::F32, VOperand::d(xw), VOperand::d(xw), VOperand::r(rstd));
  b.vop(Op::FMul, hw::DType::F32, hw::DType::F32, VOperand::d(xw), VOperand::d(xw), VOperand::d(gamma));
  b.vop(Op::FCvt, type, hw::DType::F32, VOperand::d(y), VOperand::d(xw));
}

void emit_reduce_round_broadcast(compiler::ProgramBuilder& b, const LineFamily& family, const LineRole& role,
                                 std::uint32_t sums, std::uint32_t out, std::uint32_t n, hw::DType type,
                                 const std::string& tag, const std::string& bc_tag) {
  using compiler::VOperand;
  emit_reduce(b, family, role, sums, n, hw::isa::Op::FAdd, tag);
  if (role.root()) {
    const unsigned rounded = b.mem(tag + "_out", type, out, n);
    const unsigned reduced = b.mem(tag + "_sums", hw::DType::F32, sums, n);
    b.vop(hw::isa::Op::FCvt, type, hw::DType::F32, VOperand::d(rounded), VOperand::d(reduced));
  }
  emit_broadcast(b, family, role, out, n, type, bc_tag);
}

}  // namespace wafersim::models::mesh

// The prefill's residual add and RMSNorm over MeshGEMM's blocks (docs/compiler.md, "Prefill").
// After o (or down), PE (r, c) at ring positions (a, b) holds block a + b - 1's sums of its
// column's features; the block it starts the next product with, a + b, and that block's
// residual stream are one ring position down its column and in its own residual block. So:
//   1. every PE hands its sums to its predecessor on the column's ring and takes block a + b's
//      from its successor, rounds them and adds them to the residual (the decode root's finish
//      of o and down), which stays in the residual block for the product after next;
//   2. each token's sum of squares over the column's features (one fp32 chain, as the decode's
//      norm), T values a PE;
//   3. the column's T-value vectors move (N - b) mod N positions down the ring, so that the PE
//      at column position j holds block j's sums in every column: row j then holds one block,
//      and the decode's row reduction (the same K-tree, n = T) and rstd at its root give every
//      token of the block the decode's bits; the root broadcasts them along the row;
//   4. the rstd values move b positions down the ring, back to the PEs that hold their block,
//      which normalise each token's features into the next product's input block (zeros
//      beyond their own).
// A move of d positions is a relay when T fits a hop's queue: every PE sends its T values to
// its predecessor, forwards the (d - 1) T that follow from its successor fabric to fabric and
// keeps the last T, all on one ordered microthread. It cannot deadlock: each PE's own T values
// fit the queue of its ramp on the send color whether or not its predecessor reads, and after
// them every PE passes on exactly what it takes. Larger T moves one position a task. On a
// column ring of units of two (ring.h) both members take what reaches the unit and only the
// sender sends: the other keeps the last T of the d T it takes (and in step 1 only the
// sender's sums are whole).

#include <fmt/format.h>

#include "hw/numerics/softfloat.h"
#include "models/compiler/compiled_model.h"
#include "models/compiler/kernels.h"
#include "models/compiler/program_builder.h"
#include "models/mesh/kernel_common.h"
#include "models/mesh/kernels.h"

namespace wafersim::models::mesh {
using compiler::ProgramBuilder;
using compiler::VOperand;
using hw::DType;
using hw::isa::Op;

namespace {

constexpr unsigned kCount = 12;  // the moves left (emit_rsqrt_registers clobbers r7 to r10)

struct NormBlocks {
  GemmAddrs a;
  std::uint32_t N = 1, T = 1;
  std::uint32_t sums = 0, received = 0;  // the product's sums, and the block taken from the successor
  std::uint32_t buf[2] = {};             // the moving T-value vectors
  std::uint32_t gamma = 0, scratch = 0;
  std::uint32_t inv_d = 0, eps = 0;
  bool relay = false;  // the moves relay T values fabric to fabric (T fits a hop's queue)
};

// A ring of moves down the column: task move[p] sends buf[p] to the predecessor and takes
// buf[1 - p] from the successor, kCount times, then activates `then`.
void emit_moves(ProgramBuilder& b, const NormBlocks& nb, const std::uint8_t move[2], std::uint8_t then,
                std::uint8_t send_color, std::uint8_t recv_color, bool sends, const char* tag) {
  for (int p = 0; p < 2; ++p) {
    b.start(move[p]);
    const unsigned last = b.label();
    b.branch(hw::isa::Cond::Eq, kCount, 0, last);
    b.alu(Op::Sub, kCount, kCount, 1);
    emit_ring_shift(b, DType::F32, nb.buf[p], nb.buf[1 - p], nb.T, send_color, recv_color, move[1 - p],
                    fmt::format("{}{}", tag, p), sends);
    b.bind(last);
    b.activate(then);
    b.ret();
  }
}

// The ring's colors of a PE, and the tasks of the moves one position a task (without relays).
struct Mover {
  std::uint8_t send = 0, recv = 0;
  bool sends = true;                      // not a unit's other member
  std::uint8_t fwd[2] = {}, bck[2] = {};  // the tasks of the moves one position a task
};

// Ends the current task with buf[from] moving d positions down the ring, then `then`; returns
// the buffer that holds the vector d positions up the ring once `then` runs.
std::uint32_t emit_move(ProgramBuilder& b, const NormBlocks& nb, const Mover& m, std::uint32_t from, std::uint32_t d,
                        const std::uint8_t tasks[2], std::uint8_t then, const char* tag) {
  if (!nb.relay) {
    b.mov(kCount, d);
    b.activate(tasks[from]);
    b.ret();
    return (from + d) % 2;
  }
  if (d == 0) {
    b.activate(then);
    b.ret();
    return from;
  }
  compiler::VectorOptions o;
  o.async = true;
  o.ut = 1;
  const std::uint32_t T = nb.T;
  if (!m.sends) {  // the last T of the d T that reach the unit
    o.on_done = hw::isa::OnDone::Activate;
    o.task = then;
    b.vop(Op::FMov, DType::F32, DType::F32,
          VOperand::d(b.circ(fmt::format("{}_to", tag), DType::F32, nb.buf[1 - from], T, d * T)),
          VOperand::d(b.fabin(fmt::format("{}_kept", tag), DType::F32, m.recv, d * T)), {}, {}, o);
    b.ret();
    return 1 - from;
  }
  b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(b.fabout(fmt::format("{}_own", tag), DType::F32, m.send, T)),
        VOperand::d(b.mem(fmt::format("{}_from", tag), DType::F32, nb.buf[from], T)), {}, {}, o);
  if (d > 1)
    b.vop(Op::FMov, DType::F32, DType::F32,
          VOperand::d(b.fabout(fmt::format("{}_on", tag), DType::F32, m.send, (d - 1) * T)),
          VOperand::d(b.fabin(fmt::format("{}_by", tag), DType::F32, m.recv, (d - 1) * T)), {}, {}, o);
  o.on_done = hw::isa::OnDone::Activate;
  o.task = then;
  b.vop(Op::FMov, DType::F32, DType::F32,
        VOperand::d(b.mem(fmt::format("{}_to", tag), DType::F32, nb.buf[1 - from], T)),
        VOperand::d(b.fabin(fmt::format("{}_kept", tag), DType::F32, m.recv, T)), {}, {}, o);
  b.ret();
  return 1 - from;
}

// Step 1 and 2 on block a + b: the residual add into the residual block, the sums of squares
// into buf[0].
void emit_residual_and_squares(ProgramBuilder& b, const MeshLayout& l, const NormBlocks& nb, std::uint32_t k) {
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  const std::uint32_t e = l.esize();
  for (std::uint32_t t = 0; t < nb.T; ++t) {
    const unsigned res = b.mem(fmt::format("res{}", t), dt, nb.a.residual + t * l.kc_max * e, k);
    if (k) {
      const unsigned h = b.mem(fmt::format("h{}", t), dt, nb.scratch, k);
      b.vop(Op::FCvt, dt, DType::F32, VOperand::d(h),
            VOperand::d(b.mem(fmt::format("sum{}", t), DType::F32, nb.received + t * nb.a.nmax * 4, k)));
      b.vop(Op::FAdd, dt, dt, VOperand::d(res), VOperand::d(res), VOperand::d(h));
    }
    b.movf(2, DType::F32, 0);
    if (k) b.reduce(Op::FDot, DType::F32, dt, 2, VOperand::d(res), VOperand::d(res));
    b.st(nb.buf[0] + t * 4, 2);
  }
}

// Step 4's end: each token's features normalised into row t of the next product's input
// block, zeros beyond them.
void emit_normalise(ProgramBuilder& b, const MeshLayout& l, const NormBlocks& nb, std::uint32_t k, std::uint32_t rstd,
                    std::uint32_t x) {
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  const std::uint32_t e = l.esize();
  const unsigned xw = b.mem("xw", DType::F32, l.addrs().xw, k), g = b.mem("gamma", DType::F32, nb.gamma, k);
  b.movf(15, DType::F32, 0);
  for (std::uint32_t t = 0; t < nb.T; ++t) {
    const std::uint32_t row = x + t * nb.a.kmax * e;
    if (k) {
      b.ld(5, rstd + t * 4);
      const unsigned res = b.mem(fmt::format("x{}", t), dt, nb.a.residual + t * l.kc_max * e, k);
      const unsigned out = b.mem(fmt::format("y{}", t), dt, row, k);
      emit_rmsnorm_scale(b, dt, res, xw, g, out, 5);
    }
    if (k < nb.a.kmax)
      b.vop(Op::FMov, dt, dt, VOperand::d(b.mem(fmt::format("pad{}", t), dt, row + k * e, nb.a.kmax - k)),
            VOperand::r(15));
  }
}

std::shared_ptr<const hw::isa::Program> build(const MeshLayout& l, const std::string& name, const NormBlocks& nb,
                                              std::uint32_t r, std::uint32_t c) {
  const Ring& ring = l.column_ring();
  const std::uint32_t N = nb.N, b_pos = l.row_ring().position(c);
  const std::uint32_t k = static_cast<std::uint32_t>(l.col_features(c).size());
  const bool moves = ring.positions() > 1;
  const std::uint32_t forward = moves ? (N - b_pos) % N : 0, back = moves ? b_pos : 0;
  const std::uint32_t n = nb.T * nb.a.nmax;
  ProgramBuilder b(name);
  const std::uint8_t main = b.task("main");
  b.entry(main);
  const std::uint8_t add = b.declare_task("add"), reduce = b.declare_task("reduce"), norm = b.declare_task("norm");
  Mover m;
  m.send = ring.send_color(r);
  m.recv = ring.recv_color(r);
  m.sends = ring.sends(r);
  if (!nb.relay) {
    for (int p = 0; p < 2; ++p) m.fwd[p] = b.declare_task(fmt::format("fwd{}", p));
    for (int p = 0; p < 2; ++p) m.bck[p] = b.declare_task(fmt::format("back{}", p));
  }
  if (moves) {  // step 1: block a + b's sums from the successor, block a + b - 1's to the predecessor
    emit_ring_shift(b, DType::F32, nb.sums, nb.received, n, m.send, m.recv, add, "sums", m.sends);
  } else {
    b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(b.mem("received", DType::F32, nb.received, n)),
          VOperand::d(b.mem("sums", DType::F32, nb.sums, n)));
    b.activate(add);
    b.ret();
  }
  b.start(add);
  emit_residual_and_squares(b, l, nb, k);
  const std::uint32_t held = emit_move(b, nb, m, 0, forward, m.fwd, reduce, "f");
  if (!nb.relay) emit_moves(b, nb, m.fwd, reduce, m.send, m.recv, m.sends, "f");
  // Step 3: row r now holds one block's sums of squares in every column.
  b.start(reduce);
  const LineFamily& f = l.rows();
  const LineRole role = f.role(c);
  emit_reduce(b, f, role, nb.buf[held], nb.T, Op::FAdd, "ss");
  if (role.root())
    for (std::uint32_t t = 0; t < nb.T; ++t) {
      b.ld(4, nb.buf[held] + t * 4);
      emit_rstd(b, nb.inv_d, nb.eps);
      b.st(nb.buf[held] + t * 4, 5);
    }
  emit_broadcast(b, f, role, nb.buf[held], nb.T, DType::F32, "rstd");
  const std::uint32_t rstd = emit_move(b, nb, m, held, back, m.bck, norm, "b");
  if (!nb.relay) emit_moves(b, nb, m.bck, norm, m.send, m.recv, m.sends, "b");
  b.start(norm);
  emit_normalise(b, l, nb, k, nb.buf[rstd], nb.a.x[0]);
  b.ret();
  return b.finish();
}

}  // namespace

MeshStep norm_blocks_step(const MeshLayout& l, const compiler::Target& t, Gemv g, std::uint32_t layer,
                          std::uint64_t tokens, bool code) {
  if (g != Gemv::O && g != Gemv::Down) throw std::logic_error("norm_blocks_step: after o or down");
  const bool second = g == Gemv::O;  // o: ln2 of this layer; down: ln1 of the next
  const std::uint32_t norm_layer = second ? layer : layer + 1;
  if (norm_layer >= l.layers()) throw std::logic_error("norm_blocks_step: the next layer is not on this wafer");
  NormBlocks nb;
  nb.a = gemm_addrs(l, second ? Gemv::GateUp : Gemv::Qkv, tokens, l.align());
  nb.N = l.gemm_n();
  nb.T = nb.a.block;
  nb.sums = nb.a.acc[(nb.N - 1) % 2];
  nb.received = nb.a.acc[nb.N % 2];
  nb.buf[0] = nb.sums;
  nb.buf[1] = nb.sums + ((nb.T * 4 + 3) / 4) * 4;
  nb.gamma = second ? l.addrs().layers[layer].g2 : l.addrs().layers[norm_layer].g1;
  nb.scratch = l.addrs().x1;
  nb.inv_d = hw::numerics::from_double(DType::F32, 1.0 / static_cast<double>(l.shape().d));
  nb.eps = hw::numerics::from_double(DType::F32, l.shape().epsilon);
  nb.relay = nb.T <= t.fabric.queue_depth;
  // o's and down's sums are laid out as their outputs: the column's features, kc_max a token.
  nb.a.nmax = l.kc_max;
  MeshStep step;
  step.layer = layer;
  step.name = fmt::format("prefill.h{}.{}", norm_layer, second ? "ln2" : "ln1");
  step.kernel = "norm_blocks";
  const Ring& ring = l.column_ring();
  build_programs(
      step, l.region().rows, l.region().columns,
      [&](std::uint32_t r) { return fmt::format("{}|{}|{}", ring.send_color(r), ring.recv_color(r), ring.sends(r)); },
      [&](std::uint32_t c) {
        return fmt::format("k{}|b{}{}", l.col_features(c).size(), l.row_ring().position(c), role_key(l.rows().role(c)));
      },
      [&](std::uint32_t r, std::uint32_t c) { return build(l, fmt::format("{}[{},{}]", step.name, r, c), nb, r, c); },
      code);
  // The busiest PE: the block received and sent, the residual adds, the squares, N moves of T
  // values, the row's allreduce of T values, rstd at its root, the normalisation.
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  const std::uint32_t T = nb.T, k = l.kc_max, lanes = t.lanes(dt), lanes32 = t.lanes(DType::F32);
  const std::uint64_t moved = std::uint64_t{T} * k + std::uint64_t{nb.N} * T;
  compiler::Work& w = step.work;
  std::uint64_t latency = 0;
  w.sram_reads += moved;
  w.sram_writes += moved;
  w.ramp_in += moved;
  w.ramp_out += moved;
  w.link += moved;
  w.issue += nb.relay ? 6 : 6ull * nb.N;
  for (std::uint32_t i = 0; i < T; ++i) {
    add_vector(w, t, k, 4, 1, lanes);    // the rounding of the sums
    add_vector(w, t, k, 2, 2, lanes);    // the residual add
    w.datapath_steps += k;               // the sum of squares
    add_vector(w, t, k, 4, 1, lanes);    // widened
    add_vector(w, t, k, 4, 1, lanes32);  // x rstd
    add_vector(w, t, k, 4, 2, lanes32);  // x gamma
    add_vector(w, t, k, 4, 1, lanes);    // rounded into the block
  }
  w.issue += 24ull * T;  // rstd's scalar steps
  add_allreduce(w, latency, l.rows(), T, t);
  latency += std::uint64_t{nb.N} * ring.max_hops() * t.fabric.hop_latency.count() + 24ull * T;
  w.flops = 4 * l.shape().d * tokens;
  step.bound = bound_of(w, latency, t);
  return step;
}

}  // namespace wafersim::models::mesh

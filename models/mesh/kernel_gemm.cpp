// MeshGEMM for the prefill (docs/compiler.md, "Prefill"): the prompt's P tokens through one
// matrix product of a layer, the weights where the decode placement keeps them (PE (r, c)
// holds the tile of the inputs and outputs of its row and column), on a region whose rings
// (ring.h) have N positions each: a square of N x N PEs, or a rectangle up to twice as long as
// wide whose longer lines' positions are units of one or two PEs. The tokens are cut into N
// blocks of T = ceil(P / N) (the last ones padded with zeros). PE (r, c), at ring positions
// (a, b) of its column and row, holds at step s the inputs of block j = (a + b + s) mod N and
// the fp32 partial sums of block j's outputs of its line: its unit hands its input block to
// its ring predecessor along the lines that share those inputs (both members of a unit of two
// take it), adds its FMACs (one per input element and token, each token's on an ordered
// microthread), hands each token's partial sums, as its last FMAC makes them, to its
// predecessor along the lines they are reduced over (a few hops each), and takes the next
// blocks from its successors. In a unit of two along the partial sums' lines the member that
// is not the sender starts each step from zero and hands its sums to the sender, which adds
// them to its own as they leave. After N steps every partial sum has passed every PE of its
// line: block j's outputs of a line rest, complete, at the sender of ring position
// (j - a - N + 1) mod N of that line (Cannon's algorithm with the weights stationary). Every
// PE computes and moves the busiest PE's number of inputs and outputs (zeros beyond its own),
// so every step runs the same code on every PE: the kernel is periodic in its steps.

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "models/compiler/compiled_model.h"
#include "models/compiler/program_builder.h"
#include "models/mesh/kernel_common.h"
#include "models/mesh/kernels.h"

namespace wafersim::models::mesh {
using compiler::ProgramBuilder;
using compiler::VectorOptions;
using compiler::VOperand;
using hw::DType;
using hw::isa::Op;

std::uint32_t gemm_inputs(const MeshLayout& l, Gemv g, std::uint32_t r, std::uint32_t c) {
  switch (g) {
    case Gemv::O:
      return static_cast<std::uint32_t>(l.q_indices(r).size());
    case Gemv::Down:
      return static_cast<std::uint32_t>(l.row_ff(r).size());
    default:
      return static_cast<std::uint32_t>(l.col_features(c).size());
  }
}

std::uint32_t gemm_outputs(const MeshLayout& l, Gemv g, std::uint32_t r, std::uint32_t c) {
  switch (g) {
    case Gemv::Qkv:
      return static_cast<std::uint32_t>(l.qkv_indices(r).size());
    case Gemv::GateUp:
      return static_cast<std::uint32_t>(2 * l.row_ff(r).size());
    case Gemv::Head:
      return static_cast<std::uint32_t>(l.row_vocab(r).size());
    default:
      return static_cast<std::uint32_t>(l.col_features(c).size());
  }
}

bool reduces_along_rows(Gemv g) { return g != Gemv::O && g != Gemv::Down; }

GemmAddrs gemm_addrs(const MeshLayout& l, Gemv g, std::uint64_t tokens, std::uint32_t align) {
  const Region& reg = l.region();
  const std::uint32_t N = l.gemm_positions();
  if (N == 0) throw std::logic_error("gemm_addrs: MeshGEMM takes a region at most twice as long as wide");
  GemmAddrs a;
  a.block = static_cast<std::uint32_t>((tokens + N - 1) / N);
  // A PE's inputs and outputs depend on its row or on its column alone.
  for (std::uint32_t r = 0; r < reg.rows; ++r) {
    a.kmax = std::max(a.kmax, gemm_inputs(l, g, r, 0));
    a.nmax = std::max(a.nmax, gemm_outputs(l, g, r, 0));
  }
  for (std::uint32_t c = 0; c < reg.columns; ++c) {
    a.kmax = std::max(a.kmax, gemm_inputs(l, g, 0, c));
    a.nmax = std::max(a.nmax, gemm_outputs(l, g, 0, c));
  }
  // Sized for the largest of the layer's products (the planner's sizes): the prefill's moves
  // between products find every product's buffers at the same addresses. The prefill has no
  // head: the head's product (tests alone) takes its own outputs' size.
  PrefillBlockBytes bytes = prefill_block_bytes(l.shape(), tile_sizes(l.shape(), reg.rows, reg.columns), tokens, N);
  if (g == Gemv::Head) bytes.acc = std::max<std::uint64_t>(bytes.acc, std::uint64_t{a.block} * l.nv_max * 4);
  const PrefillBuffers b = prefill_buffers(l.addrs(), bytes.x, bytes.acc, bytes.residual, align, l.sram_bytes());
  for (int p = 0; p < 2; ++p) {
    a.x[p] = b.x[p];
    a.acc[p] = b.acc[p];
  }
  a.residual = b.residual;
  a.x_bytes = b.x_bytes;
  a.acc_bytes = b.acc_bytes;
  a.in_logits = b.in_logits;
  a.end = b.end;
  return a;
}

namespace {

// A PE's part in a unit of two of the partial sums' ring (ring.h): the member that is not
// the sender starts every step from zero and sends each token's sums to the sender on the
// pair color (Partial), the sender adds them to its own before they leave (Adds).
enum class Pair : std::uint8_t { None, Partial, Adds };

struct PeGemm {
  std::uint32_t k = 0, n = 0;               // inputs and outputs
  std::uint8_t x_send = 0, x_recv = 0;      // colors of the input blocks' ring
  std::uint8_t acc_send = 0, acc_recv = 0;  // and of the partial sums' ring
  bool x_shift = false, acc_shift = false;  // the rings have more than one position
  bool x_sends = true;                      // not in a unit of two of the inputs' ring whose sender is the other
  Pair pair = Pair::None;
  std::uint8_t pair_color = 0;
};

// The FMACs of one step on buffers p: acc[t] += w[i] x[t][i] for every token t of the block
// and input i in order, each token's chain on one ordered microthread. In a step that shifts
// (`send`), token t's last FMAC writes its sums to the partial sums' ring instead of back to
// acc, and the tokens alternate between microthreads 2 and 3: token t + 1's FMACs run while
// token t's sums leave (the ring's color, held by the sending FMAC, keeps the tokens in order).
// The last sending FMAC unblocks task `next`. Without `send`, everything runs on microthread 2.
void emit_fmacs(ProgramBuilder& b, const MeshLayout& l, const GemmAddrs& a, std::uint32_t w_addr,
                std::uint32_t w_stride, const PeGemm& pe, int p, const char* tag, bool send, std::uint8_t next) {
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  if (!pe.n) return;
  // Where a token's sums go: the ring (a shift), the pair's sender (a unit's other member, in
  // every step), or after the pair's sums are added (its sender).
  const bool to_pair = pe.pair == Pair::Partial, adds = pe.pair == Pair::Adds;
  const unsigned out = send && !to_pair ? b.fabout(fmt::format("aout{}{}", tag, p), DType::F32, pe.acc_send, pe.n) : 0;
  const unsigned pair_out = to_pair ? b.fabout(fmt::format("pout{}{}", tag, p), DType::F32, pe.pair_color, pe.n) : 0;
  const unsigned pair_in = adds ? b.fabin(fmt::format("pin{}{}", tag, p), DType::F32, pe.pair_color, pe.n) : 0;
  const bool ordered = send || to_pair || adds;
  for (std::uint32_t t = 0; t < a.block; ++t) {
    const unsigned acc = b.mem(fmt::format("acc{}{}_{}", tag, p, t), DType::F32, a.acc[p] + t * a.nmax * 4, pe.n);
    const unsigned w = b.mem(fmt::format("w{}{}_{}", tag, p, t), dt, w_addr, pe.n);
    VectorOptions o;
    o.async = true;
    o.ut = ordered ? static_cast<std::uint8_t>(2 + t % 2) : 2;
    VectorOptions last = o;
    if (send && t + 1 == a.block) {
      last.on_done = hw::isa::OnDone::Unblock;
      last.task = next;
    }
    for (std::uint32_t i = 0; i < pe.k; ++i) {
      b.ld(1, a.x[p] + (t * a.kmax + i) * l.esize(), l.esize());
      const bool final = i + 1 == pe.k;
      const unsigned dst = final && to_pair ? pair_out : final && send && !adds ? out : acc;
      b.vop(Op::FMac, DType::F32, dt, VOperand::d(dst), VOperand::d(acc), VOperand::d(w), VOperand::r(1),
            final && !adds ? last : o);
      if (i + 1 < pe.k) b.dsd(Op::DsdAdd, w, w_stride);
    }
    if (adds)  // the other member's sums of the token added: into the shift, or kept
      b.vop(Op::FAdd, DType::F32, DType::F32, VOperand::d(send ? out : acc), VOperand::d(acc), VOperand::d(pair_in), {},
            last);
    if (pe.k > 1) b.dsd(Op::DsdAdd, w, -static_cast<std::int64_t>((pe.k - 1) * w_stride));
  }
}

// One step's task on buffers p: its FMACs and, unless it is the last step (r10 counts them
// down), the shift into buffers 1 - p, which starts task `next` once the blocks are received
// (activate) and sent (unblock). The input block leaves first, on microthread 2 before the
// FMACs, so a PE's inputs reach its predecessor before its partial sums do, in the order the
// predecessor receives them.
void emit_step(ProgramBuilder& b, const MeshLayout& l, const GemmAddrs& a, std::uint32_t w_addr, std::uint32_t w_stride,
               const PeGemm& pe, int p, std::uint8_t next) {
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  if (pe.pair == Pair::Partial && pe.n)  // a unit's other member: its own sums from zero
    b.vop(Op::FMov, DType::F32, DType::F32,
          VOperand::d(b.mem(fmt::format("zero{}", p), DType::F32, a.acc[p], a.block * pe.n)), VOperand::r(15));
  const unsigned last = b.label();
  b.alu(Op::Sub, 10, 10, 1);
  b.branch(hw::isa::Cond::Eq, 10, 0, last);
  if (!pe.x_shift || !pe.acc_shift || !pe.n) {  // one PE: nothing moves
    emit_fmacs(b, l, a, w_addr, w_stride, pe, p, "s", false, next);
    b.activate(next);
    b.ret();
  } else {
    const std::uint32_t nx = a.block * pe.k, nacc = a.block * pe.n;
    b.block(next);
    // Receives on microthread 1: the inputs, then the partial sums (the last activates `next`).
    VectorOptions o;
    o.async = true;
    o.ut = 1;
    b.vop(Op::FMov, dt, dt, VOperand::d(b.mem(fmt::format("xr{}", p), dt, a.x[1 - p], nx)),
          VOperand::d(b.fabin(fmt::format("xin{}", p), dt, pe.x_recv, nx)), {}, {}, o);
    o.on_done = hw::isa::OnDone::Activate;
    o.task = next;
    b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(b.mem(fmt::format("ar{}", p), DType::F32, a.acc[1 - p], nacc)),
          VOperand::d(b.fabin(fmt::format("ain{}", p), DType::F32, pe.acc_recv, nacc)), {}, {}, o);
    VectorOptions s;
    s.async = true;
    s.ut = 2;
    if (pe.x_sends)
      b.vop(Op::FMov, dt, dt, VOperand::d(b.fabout(fmt::format("xout{}", p), dt, pe.x_send, nx)),
            VOperand::d(b.mem(fmt::format("xs{}", p), dt, a.x[p], nx)), {}, {}, s);
    emit_fmacs(b, l, a, w_addr, w_stride, pe, p, "s", true, next);
    b.ret();
  }
  b.bind(last);
  emit_fmacs(b, l, a, w_addr, w_stride, pe, p, "f", false, next);
  b.ret();
}

std::shared_ptr<const hw::isa::Program> build(const MeshLayout& l, const std::string& name, const GemmAddrs& a,
                                              std::uint32_t w_addr, std::uint32_t w_stride, const PeGemm& pe,
                                              std::uint32_t steps) {
  ProgramBuilder b(name);
  const std::uint8_t main = b.task("main");
  b.entry(main);
  const std::uint8_t even = b.declare_task("even"), odd = b.declare_task("odd");
  b.mov(10, steps);
  if (pe.n) {
    b.movf(15, DType::F32, 0);
    b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(b.mem("acc0", DType::F32, a.acc[0], a.block * pe.n)),
          VOperand::r(15));
  }
  b.activate(even);
  b.ret();
  b.start(even);
  emit_step(b, l, a, w_addr, w_stride, pe, 0, odd);
  b.start(odd);
  emit_step(b, l, a, w_addr, w_stride, pe, 1, even);
  return b.finish();
}

}  // namespace

MeshStep gemm_step(const MeshLayout& l, const compiler::Target& t, Gemv g, std::uint32_t layer, std::uint64_t tokens,
                   std::uint32_t steps, bool code) {
  const Region& reg = l.region();
  const std::uint32_t N = l.gemm_positions();
  if (N == 0) throw std::logic_error("gemm_step: MeshGEMM takes a region at most twice as long as wide");
  if (steps == 0 || steps > N) throw std::logic_error("gemm_step: 1 to N steps");
  const GemmAddrs a = gemm_addrs(l, g, tokens, l.align());
  const bool along_rows = reduces_along_rows(g);
  // Inputs travel along the lines that share them, partial sums along the lines they reduce.
  const Ring& x_ring = along_rows ? l.column_ring() : l.row_ring();
  const Ring& acc_ring = along_rows ? l.row_ring() : l.column_ring();
  const Addrs& ad = l.addrs();
  std::uint32_t w_addr = 0, w_stride = 0;
  switch (g) {
    case Gemv::Qkv:
      w_addr = ad.layers[layer].wqkv, w_stride = l.nqkv_max;
      break;
    case Gemv::O:
      w_addr = ad.layers[layer].wo, w_stride = l.kc_max;
      break;
    case Gemv::GateUp:
      w_addr = ad.layers[layer].wgu, w_stride = 2 * l.nf_max;
      break;
    case Gemv::Down:
      w_addr = ad.layers[layer].wd, w_stride = l.kc_max;
      break;
    case Gemv::Head:
      w_addr = ad.head, w_stride = l.nv_max;
      break;
  }
  auto pe_of = [&](std::uint32_t r, std::uint32_t c) {
    // Every PE takes the busiest one's inputs and outputs (zeros beyond its own): each step
    // then runs the same code everywhere, and a ring runs at its slowest PE's pace anyway.
    PeGemm p;
    p.k = a.kmax;
    p.n = a.nmax;
    const std::uint32_t xi = along_rows ? r : c, ai = along_rows ? c : r;
    p.x_send = x_ring.send_color(xi);
    p.x_recv = x_ring.recv_color(xi);
    p.acc_send = acc_ring.send_color(ai);
    p.acc_recv = acc_ring.recv_color(ai);
    p.x_shift = x_ring.positions() > 1;
    p.acc_shift = acc_ring.positions() > 1;
    p.x_sends = x_ring.sends(xi);
    if (acc_ring.paired(ai)) p.pair = acc_ring.sends(ai) ? Pair::Adds : Pair::Partial;
    p.pair_color = acc_ring.pair_color();
    return p;
  };
  MeshStep step;
  step.layer = layer;
  step.name = g == Gemv::Head ? "prefill.head" : fmt::format("prefill.h{}.{}", layer, to_string(g));
  step.kernel = "gemm";
  // A row's class: what of its code depends on the row (outputs or inputs, and the colors of
  // the ring along its column); likewise a column's.
  build_programs(
      step, reg.rows, reg.columns,
      [&](std::uint32_t r) {
        const PeGemm p = pe_of(r, 0);
        return fmt::format("{}|{}|{}{}|{}{}", along_rows ? p.n : p.k, along_rows ? 'x' : 'a',
                           along_rows ? p.x_send : p.acc_send, along_rows ? p.x_recv : p.acc_recv,
                           along_rows ? p.x_sends : true, along_rows ? 0 : static_cast<int>(p.pair));
      },
      [&](std::uint32_t c) {
        const PeGemm p = pe_of(0, c);
        return fmt::format("{}|{}{}|{}{}", along_rows ? p.k : p.n, along_rows ? p.acc_send : p.x_send,
                           along_rows ? p.acc_recv : p.x_recv, along_rows ? true : p.x_sends,
                           along_rows ? static_cast<int>(p.pair) : 0);
      },
      [&](std::uint32_t r, std::uint32_t c) {
        return build(l, fmt::format("{}[{},{}]", step.name, r, c), a, w_addr, w_stride, pe_of(r, c), steps);
      },
      code);
  // The busiest PE: every step's FMACs and shifts, the rings' hops and the shifts' streams.
  std::uint64_t latency = 0;
  compiler::Work& w = step.work;
  // In each step that shifts, a token's last FMAC sends its sums (one element a step, reading
  // the sum and the weight, writing nothing); the input block is read and sent, and both
  // blocks are received and written, an element a step.
  const std::uint64_t shifts = steps - 1, sent = shifts * a.block, moved = sent * (a.kmax + a.nmax);
  add_fmacs(w, t, std::uint64_t{steps} * a.block * a.kmax - sent, a.nmax);
  w.datapath_steps += sent * a.nmax;
  w.issue += 3 * sent;
  w.sram_reads += sent * (2 * a.nmax + 1) + sent * a.kmax;
  w.sram_writes += moved;
  w.ramp_in += moved;
  w.ramp_out += moved;
  w.link += sent * std::max(a.kmax, a.nmax);
  w.issue += 6ull * steps;
  bool pairs = false;
  for (std::uint32_t p = 0; p < acc_ring.positions(); ++p) pairs = pairs || acc_ring.members(p) == 2;
  if (pairs) {  // a unit's sender: the other member's sums received and added, a token at a time
    const std::uint64_t added = std::uint64_t{steps} * a.block * a.nmax;
    add_vector(w, t, added, 4, 2, t.lanes(DType::F32));
    w.ramp_in += added;
    w.issue += std::uint64_t{steps} * a.block;
  }
  const std::uint64_t hops = std::max(x_ring.max_hops(), acc_ring.max_hops());
  latency += shifts * hops * t.fabric.hop_latency.count();
  const GemvShape shape = gemv_shape(l.shape(), g);
  w.flops = 2 * tokens * shape.in * shape.out * steps / N;
  step.bound = bound_of(w, latency, t);
  return step;
}

}  // namespace wafersim::models::mesh

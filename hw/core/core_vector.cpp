// Vector instructions of a Core: issue, per-cycle steps against the SRAM ports, the ramp
// and the datapath, and retirement.

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "hw/core/core.h"
#include "hw/numerics/elementary.h"
#include "hw/numerics/narrow.h"
#include "hw/numerics/softfloat.h"
#include "sim/errors.h"

namespace wafersim::hw {
using isa::Descriptor;
using isa::Instruction;
using isa::Op;
using isa::Operand;
using sim::Cycle;

namespace {
std::uint64_t bit(unsigned c) { return std::uint64_t{1} << c; }
constexpr int kVectorRunAhead = 256;  // steps at most per tick (Core::run_ahead_vector)

// The elements of an operation's next step: up to its per-step count, within one wavelet's
// elements when its fabric input repeats.
inline std::uint32_t step_count(const VectorOp& op) {
  const std::uint32_t count = std::min(op.per_step, op.n - op.next);
  return op.repeat > 1 ? std::min(count, op.repeat - op.in_wavelet) : count;
}
}  // namespace

Core::Step Core::issue_vector(const Instruction& ins, Cycle now, Stall* why) {
  std::uint64_t in = 0, out = 0;
  for (const Operand& o : ins.ops) {
    if (o.kind != Operand::Kind::Dsd) continue;
    const Descriptor& d = dsd_[static_cast<std::size_t>(o.imm)];
    if (d.kind == Descriptor::Kind::FabIn) in |= bit(d.color);
    if (d.kind == Descriptor::Kind::FabOut) out |= bit(d.color);
  }
  if (((in & held_in_) || (out & held_out_)) && !behind_own_holders(ins, in, out)) {
    *why = Stall::Queue;
    return Step::Stalled;
  }
  VectorOp* slot = nullptr;
  if (!ins.async) {
    slot = &ops_[0];
  } else if (live_.size() + parked_.size() - (live_slots_ & 1u) >= p_->pe.microthreads) {  // every microthread busy
    *why = Stall::Microthread;
    return Step::Stalled;
  } else {
    // The first microthread slot not live, if one was made already.
    const std::uint64_t free = ~live_slots_ & ~std::uint64_t{1};
    if (free && static_cast<std::size_t>(__builtin_ctzll(free)) < ops_.size()) slot = &ops_[__builtin_ctzll(free)];
    if (!slot && ops_.size() < 1 + p_->pe.microthreads) {  // microthread slots are made on first use
      // Doubling, but never past the core's slot count (a vector's own growth would hold 16 for 9).
      if (ops_.size() == ops_.capacity()) ops_.reserve(std::min<std::size_t>(2 * ops_.size(), 1 + p_->pe.microthreads));
      ops_.emplace_back();
      slot = &ops_.back();
    }
    if (!slot) {
      *why = Stall::Microthread;
      return Step::Stalled;
    }
  }
  prepare(*slot, ins, now);
  if (ins.ut != isa::Instruction::kUnordered) order_after_predecessor(*slot);
  // seq increases: oldest first; after any run
  (slot->after_pred ? parked_ : live_).push_back(static_cast<std::uint8_t>(slot - ops_.data()));
  earliest_done_ = std::min(earliest_done_, slot->done_at);
  held_in_ |= in;
  held_out_ |= out;
  ++c_.instructions;
  ++pc_;
  ready_at_ = now + p_->pe.latency.scalar;
  return Step::Progress;
}

void Core::prepare(VectorOp& op, const Instruction& ins, Cycle now) {
  std::vector<VectorOp::Access> keep = std::move(op.pending);
  op = VectorOp{};
  op.pending = std::move(keep);
  live_slots_ |= std::uint64_t{1} << (&op - ops_.data());
  op.sync = !ins.async;
  op.pc = pc_;
  op.seq = seq_++;
  op.issued_at = now;
  op.ins = &ins;
  const bool reduction = isa::is_reduction(ins.op);
  int first = -1;
  for (int k = 0; k < 4; ++k) {
    const Operand& o = ins.ops[k];
    if (o.kind == Operand::Kind::Dsd) {
      op.d[k] = dsd_[static_cast<std::size_t>(o.imm)];
      op.is_dsd[k] = true;
      if (op.d[k].kind == Descriptor::Kind::FabIn) {
        op.in_slot = k;
        op.sparse = op.d[k].sparse;
      }
      if (op.d[k].kind == Descriptor::Kind::FabOut) op.fab_out = true;
      if (first < 0 && !(reduction && k == 0)) first = k;
    } else if (o.kind == Operand::Kind::Reg) {
      op.scalar[k] = regs_[o.reg];
    }
  }
  if (op.in_slot >= 0) op.in_bit = bit(op.d[op.in_slot].color);
  if (op.fab_out) op.out_bit = bit(op.d[0].color);
  if (reduction) op.acc = regs_[ins.ops[0].reg];
  const int lead = op.sparse ? op.in_slot : first;
  op.n = op.d[lead].length;
  auto dname = [&](int k) { return program_->descriptors[static_cast<std::size_t>(ins.ops[k].imm)].name; };
  for (int k = 0; k < 4; ++k) {
    if (!op.is_dsd[k] || k == lead) continue;
    if (op.sparse && op.d[k].is_memory()) continue;  // indexed by the stream
    if (op.d[k].length != op.n)
      fault(fmt::format("length mismatch: '{}' has {} elements but '{}' has {}", dname(lead), op.n, dname(k),
                        op.d[k].length),
            pc_);
  }
  const isa::OpInfo& info = isa::info(ins.op);
  op.info = &info;
  op.lane_kind = lane_kind(info.latency == isa::LatencyClass::Scalar ? isa::LatencyClass::Mov : info.latency, ins.type);
  for (int k = 0; k < 4; ++k) {
    op.linear[k] = op.is_dsd[k] && op.d[k].kind == Descriptor::Kind::Mem && !op.sparse;
    op.step_bytes[k] = std::int64_t{op.d[k].stride} * size_of(op.d[k].dtype);
  }
  op.plain = true;
  for (int k : {1, 2, 3, 0}) {
    if (!op.is_dsd[k] || !op.d[k].is_memory()) continue;
    op.mem_slots[op.n_mem++] = static_cast<std::uint8_t>(k);
    const unsigned esize = size_of(op.d[k].dtype);
    op.esize[k] = static_cast<std::uint8_t>(esize);
    op.dense[k] = static_cast<std::uint64_t>(op.step_bytes[k] < 0 ? -op.step_bytes[k] : op.step_bytes[k]) <=
                  p_->banks.word_bytes();
    auto fits = [&](std::int64_t a) {
      return a >= 0 && static_cast<std::uint64_t>(a) + esize <= sram_.capacity() && !(a & (esize - 1));
    };
    if (op.d[k].kind == Descriptor::Kind::Circ) {
      op.circ[k] = true;
      op.circ_slots = static_cast<std::uint8_t>(op.circ_slots | 1u << k);
      op.step_bytes[k] = esize;
      op.dense[k] = true;
      op.in_range[k] = fits(op.d[k].base) && fits(op.d[k].base + std::int64_t{op.d[k].size - 1} * esize);
      op.circ_end[k] = op.d[k].base + std::int64_t{op.d[k].size} * esize;
    } else if (op.linear[k] && op.n > 0) {
      const std::int64_t lo = op.d[k].base, hi = lo + op.step_bytes[k] * (op.n - 1);
      op.in_range[k] = fits(lo) && fits(hi);
    }
    if (!((op.linear[k] || op.circ[k]) && op.dense[k] && op.in_range[k])) op.plain = false;
    if (op.linear[k]) op.at[k] = op.d[k].base;
    if (op.circ[k] && op.d[k].size > 0) {
      op.at[k] = op.d[k].base + std::int64_t{op.d[k].start % op.d[k].size} * esize;
    }
  }
  // Per step, a linear or circular operand is a run of addresses and a dense input one value.
  auto flat = [&](int k) { return !op.is_dsd[k] || op.linear[k] || op.circ[k] || (k == op.in_slot && !op.sparse); };
  // One type, or fp32 partials over 16-bit inputs (widened element by element).
  op.fmac_fast = ins.op == Op::FMac && (ins.type2 == ins.type || ins.type == DType::F32) &&
                 (op.linear[0] || op.circ[0]) && (op.linear[1] || op.circ[1]) && flat(2) && flat(3);
  op.fmac_f16 = op.fmac_fast && ins.type == DType::F16 && ins.type2 == DType::F16 && (op.linear[2] || op.circ[2]) &&
                !(op.linear[3] || op.circ[3]);
  {
    // What compute() reads and writes per element, for count_traffic().
    const DType t = ins.type, t2 = ins.type2;
    DType src[3] = {t, t, t};
    int sources = 1;
    switch (ins.op) {
      case Op::FAdd:
      case Op::FSub:
      case Op::FMul:
      case Op::FMax:
      case Op::FMin:
        sources = 2;
        break;
      case Op::FCvt:
        src[0] = t2;
        break;
      case Op::FMac:
        sources = 3;
        src[1] = src[2] = t2;
        break;
      case Op::FDot:
        sources = 2;
        src[0] = src[1] = t2;
        break;
      default:
        break;
    }
    unsigned bytes = 0;
    for (int k = 1; k <= sources; ++k)
      if (op.is_dsd[k] && op.d[k].kind != Descriptor::Kind::FabIn) bytes += size_of(src[k - 1]);
    op.read_bytes = static_cast<std::uint8_t>(bytes);
    op.sends = !reduction && op.d[0].kind == Descriptor::Kind::FabOut;
    op.written_bytes = static_cast<std::uint8_t>(reduction || op.sends ? 0 : size_of(t));
  }
  const DType narrow = size_of(ins.type2) < size_of(ins.type) ? ins.type2 : ins.type;
  if (ins.op == Op::FMov)
    op.per_step = std::max(1u, p_->banks.word_bytes() / size_of(ins.type));
  else
    op.per_step = p_->lanes(narrow);
  if (op.fab_out || reduction || info.iterative) op.per_step = 1;
  if (op.in_slot >= 0) {
    op.repeat = op.sparse ? 1 : op.d[op.in_slot].repeat;
    op.per_step = std::min(op.per_step, op.repeat);
    if (op.n % op.repeat)
      fault(fmt::format("'{}' has {} elements, not a multiple of its repeat {}", dname(op.in_slot), op.n, op.repeat),
            pc_);
  }
  op.shifts = op.plain && op.n_mem > 0;
  for (std::uint32_t m = 0; m < op.n_mem && op.shifts; ++m) {
    const std::int64_t bytes = op.step_bytes[op.mem_slots[m]] * op.per_step;  // (esize for a circular one)
    const std::int64_t words = bytes / std::int64_t{p_->banks.word_bytes()};
    if (bytes % std::int64_t{p_->banks.word_bytes()} != 0 || (m > 0 && words != op.word_shift)) op.shifts = false;
    op.word_shift = static_cast<std::int32_t>(words);
  }
  const auto lat = static_cast<std::uint32_t>(p_->latency(info.latency).count());
  if (info.iterative) {
    op.interval = lat;
    op.latency = 0;
  } else {
    op.interval = 1;
    op.latency = lat;
  }
  const Cycle start = now + p_->pe.latency.vector_start;
  op.next_step = start + Cycle(op.fab_out ? op.latency : 0);
  if (op.n == 0) op.done_at = start + Cycle(op.latency);
}

Cycle Core::first_dependent_step(const VectorOp& pred) const {
  // Step j of the successor comes `forward` cycles after step j of its predecessor, which
  // took its steps one per cycle at the latest up to its last: so the successor's first step
  // is `forward - (steps - 1)` cycles after that last step, and never before the next cycle.
  if (pred.steps == 0) return pred.last_step + Cycle(1);
  const std::uint64_t forward = p_->pe.latency.forward.count();
  const std::uint64_t gap = forward > pred.steps ? forward - pred.steps + 1 : 1;
  return pred.last_step + Cycle(gap);
}

void Core::order_after_predecessor(VectorOp& op) {
  op.ut = op.ins->ut;
  const VectorOp* pred = newest_on(op.ut);
  if (pred && (pred->after_pred || (pred->n > 0 && pred->next < pred->n))) {
    op.after_pred = true;  // released by release_successor() when pred takes its last step
    if (op.n == 0) op.done_at = Cycle::never();
    return;
  }
  const Cycle from = pred ? first_dependent_step(*pred) : Cycle(0);
  if (op.n > 0) {
    op.next_step = std::max(op.next_step, from);
    return;
  }
  const Cycle start = std::max(op.issued_at + p_->pe.latency.vector_start, from);
  op.last_step = start - Cycle(1);
  op.done_at = start + Cycle(op.latency);
}

const VectorOp* Core::newest_on(std::uint8_t ut) const {
  // `op` (being issued) is in neither list yet.
  const VectorOp* pred = nullptr;
  for (const auto* list : {&live_, &parked_})
    for (std::uint8_t i : *list) {
      const VectorOp& o = ops_[i];
      if (o.ut == ut && (!pred || o.seq > pred->seq)) pred = &o;
    }
  return pred;
}

VectorOp* Core::next_on(const VectorOp& pred) {
  VectorOp* next = nullptr;
  for (const auto* list : {&live_, &parked_})
    for (std::uint8_t i : *list) {
      VectorOp& o = ops_[i];
      if (o.ut == pred.ut && o.seq > pred.seq && (!next || o.seq < next->seq)) next = &o;
    }
  return next;
}

void Core::release_successor(const VectorOp& op) {
  const VectorOp* pred = &op;
  for (;;) {
    VectorOp* next = next_on(*pred);
    if (!next || !next->after_pred) return;
    next->after_pred = false;
    released_ = true;
    const Cycle from = first_dependent_step(*pred);
    if (next->n > 0) {
      next->next_step = std::max(next->next_step, from);
      return;
    }
    // No elements: done once released, and its own successor may follow at once.
    const Cycle start = std::max(next->issued_at + p_->pe.latency.vector_start, from);
    next->last_step = start - Cycle(1);
    next->done_at = start + Cycle(next->latency);
    earliest_done_ = std::min(earliest_done_, next->done_at);
    pred = next;
  }
}

std::uint32_t Core::element_address(const VectorOp& op, int slot, std::uint32_t i) const {
  const Descriptor& d = op.d[slot];
  if (op.sparse && i >= d.length)
    fault(fmt::format("sparse index {} is beyond descriptor '{}' of {} elements", i,
                      program_->descriptors[static_cast<std::size_t>(op.ins->ops[slot].imm)].name, d.length),
          op.pc);
  return checked_address(d.address(i), size_of(d.dtype), op.pc);
}

void Core::plan(VectorOp& op, std::uint32_t sparse_index, bool plain_step) {
  op.issued = 0;
  std::uint32_t n = 0;  // accesses planned
  // At most one port word per element and memory operand. Made here, not at issue: most
  // steps issue their words as they find them (issue_plain) and never list them.
  if (op.pending.size() < std::size_t{4} * op.per_step) op.pending.resize(std::size_t{4} * op.per_step);
  VectorOp::Access* out = op.pending.data();
  const std::uint32_t count = step_count(op);
  const BankModel& banks = p_->banks;
  if (plain_step) {
    // Every memory operand linear, dense and in range: its words this step are the range from
    // its first element's word to its last's, a source's first dropped when it was the last
    // word of its previous step (only the first can be: the range moves one way).
    for (std::uint32_t m = 0; m < op.n_mem; ++m) {
      const int slot = op.mem_slots[m];
      std::uint32_t w0, w1;
      if (!plain_words(op, slot, count, w0, w1)) continue;
      const bool up = w1 >= w0, write = slot == 0;
      for (std::uint32_t w = w0;; w = up ? w + 1 : w - 1) {
        out[n++] = {w, write};
        if (w == w1) break;
      }
    }
    op.planned = n;
    return;
  }
  // Each memory operand's port words of this step, in element order, without repeating a
  // word (a source's also not its last word of the previous step); every address is checked
  // (for a linear descriptor, its two ends suffice, or its whole range once at issue).
  // Consecutive elements of a linear descriptor at most one port word apart cover every word
  // between the first element's and the last's.
  for (std::uint32_t m = 0; m < op.n_mem; ++m) {
    const int slot = op.mem_slots[m];
    const bool write = slot == 0;
    bool any = !write && op.has_last[slot];
    std::uint32_t last = op.last_word[slot];
    auto each = [&](std::uint32_t word) {
      if (any && word == last) return;
      out[n++] = {word, write};
      last = word;
      any = true;
    };
    if (op.linear[slot]) {
      const std::int64_t step = op.step_bytes[slot];
      const std::int64_t first = op.at[slot];
      const std::int64_t end = first + step * (count - 1);
      if (!op.in_range[slot]) {
        (void)checked_address(first, op.esize[slot], op.pc);
        (void)checked_address(end, op.esize[slot], op.pc);
      }
      if (op.dense[slot]) {
        const std::uint32_t w0 = banks.word_of(static_cast<std::uint32_t>(first));
        const std::uint32_t w1 = banks.word_of(static_cast<std::uint32_t>(end));
        for (std::uint32_t w = w0;; w = w1 > w0 ? w + 1 : w - 1) {
          each(w);
          if (w == w1) break;
        }
      } else {
        for (std::uint32_t i = 0; i < count; ++i) each(banks.word_of(static_cast<std::uint32_t>(first + step * i)));
      }
    } else {
      for (std::uint32_t i = 0; i < count; ++i)
        each(banks.word_of(element_address(op, slot, op.sparse ? sparse_index : op.next + i)));
    }
    if (!write && any) {
      op.last_word[slot] = last;
      op.has_last[slot] = true;
    }
  }
  op.planned = n;
}

inline bool Core::plain_words(VectorOp& op, int slot, std::uint32_t count, std::uint32_t& w0, std::uint32_t& w1) {
  const BankModel& banks = p_->banks;
  const std::int64_t first = op.at[slot];
  w0 = banks.word_of(static_cast<std::uint32_t>(first));
  w1 = banks.word_of(static_cast<std::uint32_t>(first + op.step_bytes[slot] * (count - 1)));
  if (slot == 0) return true;  // the destination
  const bool repeat = op.has_last[slot] && w0 == op.last_word[slot];
  op.last_word[slot] = w1;
  op.has_last[slot] = true;
  if (!repeat) return true;
  if (w0 == w1) return false;
  w0 = w1 > w0 ? w0 + 1 : w0 - 1;
  return true;
}

inline bool Core::issue_plain(VectorOp& op, std::uint32_t count, CycleResources& r, Stall* why) {
  // The accesses plan() would list for a plain step, issued as they are found. When one
  // cannot be, the step is planned as before with the accesses issued so far marked done.
  std::uint32_t done = 0;
  std::uint32_t saved_last[4];
  bool saved_has[4];
  for (std::uint32_t m = 0; m < op.n_mem; ++m) {
    const int slot = op.mem_slots[m];
    saved_last[slot] = op.last_word[slot];
    saved_has[slot] = op.has_last[slot];
    std::uint32_t w0, w1;
    if (!plain_words(op, slot, count, w0, w1)) continue;
    const bool up = w1 >= w0, write = slot == 0;
    for (std::uint32_t w = w0;; w = up ? w + 1 : w - 1) {
      const PortCycle::Result res = write ? r.port.write(w) : r.port.read(w);
      if (res == PortCycle::Result::NoPort || res == PortCycle::Result::BankBusy) {
        for (std::uint32_t k = 0; k <= m; ++k) {
          const int sl = op.mem_slots[k];
          op.last_word[sl] = saved_last[sl];
          op.has_last[sl] = saved_has[sl];
        }
        plan(op, 0, true);
        op.issued = done;
        op.open = true;
        *why = res == PortCycle::Result::NoPort ? Stall::SramPort : Stall::SramBank;
        return false;
      }
      if (res == PortCycle::Result::Ok) ++(write ? c_.sram_writes : c_.sram_reads);
      ++done;
      if (w == w1) break;
    }
  }
  return true;
}

inline void Core::took_step(VectorOp& op, const isa::OpInfo& info, std::uint32_t count, bool pops) {
  op.next += count;
  op.in_wavelet = pops ? 0 : op.in_wavelet + count;
  advance_addresses(op, count);
  op.open = false;
  ++op.steps;
  c_.vector_elements += count;
  c_.lane_ops[op.lane_kind] += count;
  c_.flops += std::uint64_t{count} * info.flops;
}

bool Core::skips_steadily(const VectorOp& op, std::uint32_t count) const {
  const BankModel& banks = p_->banks;
  for (std::uint32_t m = 0; m < op.n_mem; ++m) {
    const int slot = op.mem_slots[m];
    if (slot == 0) continue;  // the destination skips no word
    const std::int64_t first = op.at[slot];
    const std::uint32_t w0 = banks.word_of(static_cast<std::uint32_t>(first));
    const std::uint32_t w1 = banks.word_of(static_cast<std::uint32_t>(first + op.step_bytes[slot] * (count - 1)));
    // A later step's first word is its predecessor's last when the shift is this step's span.
    const bool skips = op.has_last[slot] && w0 == op.last_word[slot];
    if (skips != (std::int64_t{w1} - std::int64_t{w0} == op.word_shift)) return false;
  }
  return true;
}

inline void Core::repeat_step(VectorOp& op, const isa::OpInfo& info, std::uint32_t count, std::uint32_t n,
                              std::uint64_t reads, std::uint64_t writes) {
  c_.sram_reads += n * reads;
  c_.sram_writes += n * writes;
  const std::int64_t words = std::int64_t{op.word_shift} * n;
  for (std::uint32_t m = 0; m < op.n_mem; ++m)
    if (const int slot = op.mem_slots[m]; slot != 0)
      op.last_word[slot] = static_cast<std::uint32_t>(op.last_word[slot] + words);
  // As n steps that neither pop nor wrap: one of n times the elements, n times counted.
  took_step(op, info, n * count, op.repeat <= 1);
  op.steps += n - 1;
}

inline void Core::advance_addresses(VectorOp& op, std::uint32_t count) {
  for (std::uint32_t m = 0; m < op.n_mem; ++m) {
    const int slot = op.mem_slots[m];
    if (op.linear[slot]) {
      op.at[slot] += op.step_bytes[slot] * count;
    } else if (op.circ[slot]) {
      op.at[slot] += std::int64_t{op.esize[slot]} * count;
      if (op.at[slot] >= op.circ_end[slot]) {
        const Descriptor& d = op.d[slot];
        op.at[slot] = d.base + static_cast<std::int64_t>((std::uint64_t{d.start} + op.next) % d.size) * op.esize[slot];
      }
    }
  }
}

inline bool Core::data_front_seen(Color c) {
  if (data_front_ & bit(c.id())) return true;
  if (!data_in_front(c)) return false;
  data_front_ |= bit(c.id());
  return true;
}

inline std::uint32_t Core::input_payload(VectorOp& op, Color c) {
  if (!op.has_front_payload) {
    op.front_payload = ramp_->front(c).payload;
    op.has_front_payload = true;
  }
  return op.front_payload;
}

Core::Step Core::step(VectorOp& op, Cycle now, CycleResources& r, Stall* why) {
  const isa::OpInfo& info = *op.info;
  auto stall = [&](Stall s) {
    *why = s;
    return Step::Stalled;
  };
  if (info.iterative && iter_busy_until_ > now) return stall(Stall::Fpu);
  const std::uint32_t count = step_count(op);
  const bool pops = op.repeat <= 1 || op.in_wavelet + count == op.repeat;  // the wavelet's last elements
  std::uint32_t payload = 0, sparse_index = 0;
  if (op.in_slot >= 0) {
    const Color c(op.d[op.in_slot].color);
    if (!ramp_) fault("fabric input on a PE with no fabric attached", op.pc);
    if (!data_front_seen(c)) return stall(Stall::FabricIn);
    if (pops && r.ramp_in) return stall(Stall::Ramp);
    if (op.sparse || !p_->timing_only) {  // a timing-only dense step never reads the value
      payload = input_payload(op, c);
      sparse_index = payload >> 16;
    }
  }
  if (op.fab_out) {
    if (!ramp_) fault("fabric output on a PE with no fabric attached", op.pc);
    if (!ramp_->can_send(Color(op.d[0].color))) return stall(Stall::FabricOut);
    if (r.ramp_out) return stall(Stall::Ramp);
  }
  const bool wraps = op.circ_slots && step_wraps(op, count);
  if (!op.open) {
    if (op.plain && !wraps) {
      if (!issue_plain(op, count, r, why)) return Step::Stalled;
    } else {
      plan(op, sparse_index, false);
      op.open = true;
    }
  }
  while (op.open && op.issued < op.planned) {
    const VectorOp::Access& a = op.pending[op.issued];
    const PortCycle::Result res = a.write ? r.port.write(a.word) : r.port.read(a.word);
    if (res == PortCycle::Result::NoPort) return stall(Stall::SramPort);
    if (res == PortCycle::Result::BankBusy) return stall(Stall::SramBank);
    if (res == PortCycle::Result::Ok) ++(a.write ? c_.sram_writes : c_.sram_reads);
    ++op.issued;
  }
  if (p_->timing_only)
    count_traffic(op, count, now);
  else if (op.fmac_f16 && !wraps)
    fmac_f16(op, op.at, count, payload);
  else if (op.fmac_fast && !wraps)
    fmac_linear(op, op.at, count, payload);
  else
    compute(op, op.at, op.next, count, sparse_index, payload, now);
  if (op.in_slot >= 0 && pops) {
    ramp_->pop(Color(op.d[op.in_slot].color), now);
    data_front_ &= ~bit(op.d[op.in_slot].color);
    op.has_front_payload = false;
    r.ramp_in = true;
    ++c_.wavelets_in;
  }
  if (op.fab_out) r.ramp_out = true;
  if (info.fpu) r.fpu = true;
  if (info.iterative) iter_busy_until_ = now + Cycle(op.interval);
  took_step(op, info, count, pops);
  if (op.next >= op.n) {
    op.done_at = now + Cycle(op.interval) + Cycle(op.fab_out ? 0 : op.latency);
    earliest_done_ = std::min(earliest_done_, op.done_at);
    op.last_step = now;
    if (op.ut != isa::Instruction::kUnordered) release_successor(op);
  } else {
    op.next_step = now + Cycle(op.interval);
  }
  return Step::Progress;
}

void Core::run_ahead_vector(VectorOp& op, CycleResources& r, Cycle until) {
  assert(may_run_ahead(op));  // (a step that sends would go through step() below)
  const isa::OpInfo& info = *op.info;
  // Steps that need nothing here but their port accesses (and counters): their elements are
  // computed together, in order from `from`, before any other step and at the end.
  const bool lean_op = op.plain && !op.sparse && !info.iterative;
  std::int64_t from[4] = {};
  std::uint32_t from_next = 0;
  std::uint32_t held = 0;  // elements stepped, not computed yet
  auto compute_held = [&] {
    if (held == 0) return;
    if (p_->timing_only) {
      c_.sram_bytes_read += std::uint64_t{held} * op.read_bytes;
      c_.sram_bytes_written += std::uint64_t{held} * op.written_bytes;
    } else if (op.fmac_f16) {
      fmac_f16(op, from, held, op.front_payload);
    } else if (op.fmac_fast) {
      fmac_linear(op, from, held, op.front_payload);
    } else {
      compute(op, from, from_next, held, 0, op.front_payload, Cycle::never());  // (no sends: op.fab_out is false)
    }
    held = 0;
  };
  Cycle t = op.next_step;
  for (int k = 0; k < kVectorRunAhead && t < until; ++k) {
    const std::uint32_t count = step_count(op);
    if (op.next + count >= op.n) break;  // its last step: it may release a successor or the main thread
    const bool pops = op.repeat <= 1 || op.in_wavelet + count == op.repeat;
    if (op.in_slot >= 0) {
      if (pops) break;
      // The wavelet behind one this tick's step popped may be in front already: a data front
      // stays there until this core pops it, so the steps it feeds before its last are known.
      const Color c(op.d[op.in_slot].color);
      if (!data_front_seen(c)) break;
      if (!p_->timing_only) input_payload(op, c);  // (a new one only after the tick's step popped: nothing held)
    }
    r.reset();
    Stall why = Stall::SramPort;
    const bool lean = lean_op && (p_->timing_only || op.in_slot < 0 || op.has_front_payload);
    if (lean && !op.open && !(op.circ_slots && step_wraps(op, count))) {
      if (held == 0) {
        std::copy(op.at, op.at + 4, from);
        from_next = op.next;
      }
      const bool steady = op.shifts && count == op.per_step && skips_steadily(op, count);
      const std::uint64_t reads = c_.sram_reads, writes = c_.sram_writes;
      if (issue_plain(op, count, r, &why)) {  // what step() does of a step that neither pops nor ends
        held += count;
        took_step(op, info, count, pops);
        op.next_step = t + Cycle(op.interval);
        op.last_stall = -1;
        t = op.next_step;
        // A circular operand back at its start: the next elements do not follow these.
        bool wrapped = false;
        for (unsigned m = op.circ_slots; m; m &= m - 1) {
          const int slot = __builtin_ctz(m);
          if (op.at[slot] != from[slot] + op.step_bytes[slot] * held) {
            compute_held();
            wrapped = true;
          }
        }
        // The steps after it that issue its accesses shifted, up to the limits of this loop.
        if (steady && !wrapped && t < until) {
          // (A lean step's interval is one cycle: the n steps start at t to t + n - 1.)
          std::uint64_t n = std::min<std::uint64_t>(kVectorRunAhead - 1 - k, (until - t).count());
          n = std::min<std::uint64_t>(n, (op.n - op.next - 1) / count);                                // none the last
          if (op.repeat > 1) n = std::min<std::uint64_t>(n, (op.repeat - op.in_wavelet - 1) / count);  // none pops
          for (unsigned m = op.circ_slots; m; m &= m - 1) {                                            // none wraps
            const int slot = __builtin_ctz(m);
            n = std::min<std::uint64_t>(n, static_cast<std::uint64_t>(op.circ_end[slot] - op.at[slot] - 1) /
                                               (std::uint64_t{op.esize[slot]} * count));
          }
          if (n) {
            const auto steps = static_cast<std::uint32_t>(n);
            repeat_step(op, info, count, steps, c_.sram_reads - reads, c_.sram_writes - writes);
            held += steps * count;
            t = t + Cycle(n);
            op.next_step = t;
            k += static_cast<int>(steps);
          }
        }
        continue;
      }
    } else {
      compute_held();
      if (step(op, t, r, &why) == Step::Progress) {
        op.last_stall = -1;
        t = op.next_step;
        continue;
      }
    }
    // The ports, the banks and an iterative datapath are this core's own: retried next cycle.
    // (A fabric or ramp stall returns before the step changes anything.)
    if (why != Stall::SramPort && why != Stall::SramBank && why != Stall::Fpu) break;
    ++c_.stall[static_cast<int>(why)];
    op.last_stall = static_cast<int>(why);
    t = t + Cycle(1);
  }
  compute_held();
  op.next_step = std::max(op.next_step, t);
}

void Core::compute(VectorOp& op, const std::int64_t* from, std::uint32_t first, std::uint32_t count,
                   std::uint32_t sparse_index, std::uint32_t payload, Cycle now) {
  const Instruction& ins = *op.ins;
  const DType t = ins.type, t2 = ins.type2;
  using namespace numerics;
  // Addresses were checked when the steps were planned. A linear operand's element k is at
  // `from` plus k steps.
  if (ins.op == Op::FMov && !op.is_dsd[1] && op.linear[0]) {  // a scalar copied (zeroing sums): as below
    const std::uint32_t value = op.scalar[1] & mask_of(t);
    for (std::uint32_t k = 0; k < count; ++k)
      sram_.store(static_cast<std::uint32_t>(from[0] + std::int64_t{k} * op.step_bytes[0]), size_of(t), value);
    c_.sram_bytes_written += std::uint64_t{count} * size_of(t);
    return;
  }
  for (std::uint32_t k = 0; k < count; ++k) {
    const std::uint32_t idx = op.sparse ? sparse_index : first + k;
    auto address = [&](int slot) {
      return static_cast<std::uint32_t>(op.linear[slot] ? from[slot] + std::int64_t{k} * op.step_bytes[slot]
                                                        : op.d[slot].address(idx));
    };
    auto src = [&](int slot, DType dt) -> std::uint32_t {
      if (!op.is_dsd[slot]) return op.scalar[slot] & mask_of(dt);
      if (op.d[slot].kind == Descriptor::Kind::FabIn) return payload & mask_of(dt);
      c_.sram_bytes_read += size_of(dt);
      return sram_.load(address(slot), size_of(dt));
    };
    auto widen = [&](std::uint32_t v) { return t2 == t ? v : convert(t, t2, v); };
    std::uint32_t result = 0;
    switch (ins.op) {
      case Op::FMov:
        result = src(1, t);
        break;
      case Op::FAdd:
        result = add(t, src(1, t), src(2, t));
        break;
      case Op::FSub:
        result = sub(t, src(1, t), src(2, t));
        break;
      case Op::FMul:
        result = mul(t, src(1, t), src(2, t));
        break;
      case Op::FMax:
        result = max(t, src(1, t), src(2, t));
        break;
      case Op::FMin:
        result = min(t, src(1, t), src(2, t));
        break;
      case Op::FNeg:
        result = neg(t, src(1, t));
        break;
      case Op::FExp:
        result = exp(t, src(1, t));
        break;
      case Op::FRecip:
        result = recip(t, src(1, t));
        break;
      case Op::FCvt:
        result = convert(t, t2, src(1, t2));
        break;
      case Op::FMac: {
        const std::uint32_t a = src(1, t);
        const std::uint32_t b = widen(src(2, t2)), c = widen(src(3, t2));
        result = fma(t, b, c, a);
        break;
      }
      case Op::FSum:
        op.acc = add(t, op.acc & mask_of(t), src(1, t));
        continue;
      case Op::FRMax:
        op.acc = max(t, op.acc & mask_of(t), src(1, t));
        continue;
      case Op::FRMin:
        op.acc = min(t, op.acc & mask_of(t), src(1, t));
        continue;
      case Op::FDot: {
        const std::uint32_t b = widen(src(1, t2)), c = widen(src(2, t2));
        op.acc = fma(t, b, c, op.acc & mask_of(t));
        continue;
      }
      default:
        fault("not a vector instruction", op.pc);
    }
    const Descriptor& d = op.d[0];
    if (d.kind == Descriptor::Kind::FabOut) {
      ramp_->send(Wavelet{result, Color(d.color), false}, now);
      ++c_.wavelets_out;
    } else {
      sram_.store(address(0), size_of(t), result);
      c_.sram_bytes_written += size_of(t);
    }
  }
}

namespace {
// Whether the `count` elements from byte `first` on, `step` apart, lie in one SRAM page.
bool one_page(std::int64_t first, std::int64_t step, std::uint32_t count) {
  // Both ends were checked to lie in the SRAM (not negative).
  return static_cast<std::uint64_t>(first) / Sram::kPageBytes ==
         static_cast<std::uint64_t>(first + step * (count - 1)) / Sram::kPageBytes;
}

// y = b x c + a in fp16 (c a scalar, `c_value` its value) when each of a, b and y lies in one
// page and a's and b's pages are allocated: the loop on the pages' bytes. False (nothing done)
// otherwise.
bool fmac_f16_in_pages(Sram& sram, const std::int64_t* at, const std::int64_t* step, float c_value, std::uint32_t c,
                       std::uint32_t count) {
  using numerics::narrow::F16Single;
  if (!one_page(at[0], step[0], count) || !one_page(at[1], step[1], count) || !one_page(at[2], step[2], count))
    return false;
  const std::uint8_t* pa = sram.bytes_at(static_cast<std::uint32_t>(at[1]));
  const std::uint8_t* pb = sram.bytes_at(static_cast<std::uint32_t>(at[2]));
  if (!pa || !pb) return false;
  std::uint8_t* py = sram.bytes_for_write(static_cast<std::uint32_t>(at[0]));
  const std::int64_t sa = step[1], sb = step[2], sy = step[0];
#if defined(__F16C__) && defined(__SSE4_1__)
  // Consecutive elements, y in place of a or b or apart from them: four lanes at a time give
  // what the element loop below gives.
  auto apart = [&](const std::uint8_t* q) {
    return q == py || q + std::size_t{2} * count <= py || py + std::size_t{2} * count <= q;
  };
  if (sa == 2 && sb == 2 && sy == 2 && apart(pa) && apart(pb)) {
    std::uint32_t k = 0;
    for (; k < count; k += 4) {
      const unsigned n = std::min(4u, count - k);
      if (!numerics::narrow::mul_add_x4(c_value, pb, pa, py, n)) break;
      pa += 8;
      pb += 8;
      py += 8;
    }
    count = k < count ? count - k : 0;
  }
#endif
  for (std::uint32_t k = 0; k < count; ++k) {
    const std::uint32_t a = std::uint32_t{pa[0]} | std::uint32_t{pa[1]} << 8;
    const std::uint32_t b = std::uint32_t{pb[0]} | std::uint32_t{pb[1]} << 8;
    std::uint32_t y = 0;
    if (!F16Single::mul_add(c_value, b, a, y)) y = numerics::fma(DType::F16, b, c, a);
    py[0] = static_cast<std::uint8_t>(y);
    py[1] = static_cast<std::uint8_t>(y >> 8);
    pa += sa;
    pb += sb;
    py += sy;
  }
  return true;
}

// y = b x c + a over `count` elements of 16-bit values at running addresses (bytes; `step` per
// element), an operand of step 0 read once: the FMAC loop without calls. `A` is the format's
// arithmetic: its scalar's value (false: take the reference), mul_add and fma (false: the
// reference computes the element), and a loop on the SRAM pages' bytes (false: not taken).
template <class A>
void fmac16(Sram& sram, std::int64_t* at, const std::int64_t* step, const bool* linear, const std::uint32_t* scalar,
            std::uint32_t count) {
  const std::uint32_t b0 = linear[2] ? 0 : scalar[2] & 0xffffu, c0 = linear[3] ? 0 : scalar[3] & 0xffffu;
  typename A::Value c_value{};
  if (linear[1] && linear[2] && !linear[3] && A::value(c0, c_value)) {  // c a scalar: decoded once
    if (A::in_pages(sram, at, step, c_value, c0, count)) return;
    std::int64_t a_at = at[1], b_at = at[2], y_at = at[0];
    for (std::uint32_t k = 0; k < count; ++k) {
      const std::uint32_t a = sram.load(static_cast<std::uint32_t>(a_at), 2);
      const std::uint32_t b = sram.load(static_cast<std::uint32_t>(b_at), 2);
      std::uint32_t y = 0;
      if (!A::mul_add(c_value, b, a, y)) y = numerics::fma(A::kType, b, c0, a);
      sram.store(static_cast<std::uint32_t>(y_at), 2, y);
      a_at += step[1];
      b_at += step[2];
      y_at += step[0];
    }
    return;
  }
  for (std::uint32_t k = 0; k < count; ++k) {
    const std::uint32_t a = sram.load(static_cast<std::uint32_t>(at[1]), 2);
    const std::uint32_t b = linear[2] ? sram.load(static_cast<std::uint32_t>(at[2]), 2) : b0;
    const std::uint32_t c = linear[3] ? sram.load(static_cast<std::uint32_t>(at[3]), 2) : c0;
    std::uint32_t y = 0;
    if (!A::fma(b, c, a, y)) y = numerics::fma(A::kType, b, c, a);
    sram.store(static_cast<std::uint32_t>(at[0]), 2, y);
    for (int slot = 0; slot < 4; ++slot) at[slot] += step[slot];
  }
}

// fp16 through float (narrow::F16Single): operands are not screened, an infinite or NaN result
// is recomputed by softfloat.h; the page loop when a, b and y each lie in one page.
struct F16Arithmetic : numerics::narrow::F16Single {
  using Value = float;
  static constexpr DType kType = DType::F16;
  static bool value(std::uint32_t bits, float& v) {
    v = F16Single::value(bits);
    return true;
  }
  static bool in_pages(Sram& sram, const std::int64_t* at, const std::int64_t* step, float c_value, std::uint32_t c,
                       std::uint32_t count) {
    return fmac_f16_in_pages(sram, at, step, c_value, c, count);
  }
};

// bf16 through double (narrow::BF16: its products can overflow float).
struct Bf16Arithmetic : numerics::narrow::BF16 {
  using Value = double;
  static bool in_pages(Sram&, const std::int64_t*, const std::int64_t*, double, std::uint32_t, std::uint32_t) {
    return false;
  }
};

}  // namespace

bool Core::step_wraps(const VectorOp& op, std::uint32_t count) {
  for (unsigned m = op.circ_slots; m; m &= m - 1) {
    const int slot = __builtin_ctz(m);
    if (op.at[slot] + std::int64_t{op.esize[slot]} * count > op.circ_end[slot]) return true;
  }
  return false;
}

void Core::fmac_linear(const VectorOp& op, const std::int64_t* from, std::uint32_t count, std::uint32_t payload) {
  const DType t = op.ins->type;
  const unsigned esize = size_of(t);
  std::int64_t at[4] = {}, step[4] = {};
  bool lin[4];
  std::uint32_t scalar[4];
  for (int slot = 0; slot < 4; ++slot) {
    lin[slot] = op.linear[slot] || op.circ[slot];
    scalar[slot] = slot == op.in_slot ? payload : op.scalar[slot];
    if (!lin[slot]) continue;
    at[slot] = from[slot];
    step[slot] = op.step_bytes[slot];
  }
  if (t == DType::F16) {
    fmac16<F16Arithmetic>(sram_, at, step, lin, scalar, count);
  } else if (t == DType::BF16) {
    fmac16<Bf16Arithmetic>(sram_, at, step, lin, scalar, count);
  } else {
    const DType t2 = op.ins->type2;
    const unsigned e2 = size_of(t2);
    const std::uint32_t mask2 = mask_of(t2);
    auto src = [&](int slot) {
      const std::uint32_t v = lin[slot] ? sram_.load(static_cast<std::uint32_t>(at[slot]), e2) : scalar[slot] & mask2;
      return t2 == t ? v : numerics::convert(t, t2, v);
    };
    for (std::uint32_t k = 0; k < count; ++k) {
      const std::uint32_t a = sram_.load(static_cast<std::uint32_t>(at[1]), esize);
      const std::uint32_t b = src(2), c = src(3);
      sram_.store(static_cast<std::uint32_t>(at[0]), esize, numerics::fma(t, b, c, a));
      for (int slot = 0; slot < 4; ++slot) at[slot] += step[slot];
    }
  }
  const unsigned source_bytes = size_of(op.ins->type2);
  c_.sram_bytes_read += std::uint64_t{count} * (esize + (lin[2] + lin[3]) * source_bytes);
  c_.sram_bytes_written += std::uint64_t{count} * esize;
}

void Core::fmac_f16(const VectorOp& op, const std::int64_t* from, std::uint32_t count, std::uint32_t payload) {
  const std::uint32_t c = (op.in_slot == 3 ? payload : op.scalar[3]) & 0xffffu;
  if (!fmac_f16_in_pages(sram_, from, op.step_bytes, numerics::narrow::F16Single::value(c), c, count)) {
    fmac_linear(op, from, count, payload);
    return;
  }
  c_.sram_bytes_read += std::uint64_t{count} * op.read_bytes;
  c_.sram_bytes_written += std::uint64_t{count} * op.written_bytes;
}

void Core::count_traffic(const VectorOp& op, std::uint32_t count, Cycle now) {
  c_.sram_bytes_read += std::uint64_t{count} * op.read_bytes;
  c_.sram_bytes_written += std::uint64_t{count} * op.written_bytes;
  if (op.sends) {
    for (std::uint32_t k = 0; k < count; ++k) ramp_->send(Wavelet{0, Color(op.d[0].color), false}, now);
    c_.wavelets_out += count;
  }
}

void Core::report_vector_op(const VectorOp& op) const {
  observer_->vector_op_ran(coord_, *program_, op.pc, static_cast<std::uint32_t>(&op - ops_.data()), op.n, op.issued_at,
                           op.done_at);
}

void Core::retire(VectorOp& op, Cycle now) {
  (void)now;
  const Instruction& ins = *op.ins;
#ifndef WAFERSIM_NO_TRACE_HOOKS
  if (__builtin_expect(observer_ != nullptr, 0)) report_vector_op(op);
#endif
  if (isa::is_reduction(ins.op)) regs_[ins.ops[0].reg] = op.acc;
  ++c_.vector_ops;
  if (op.sync) {
    ready_at_ = op.done_at;
  } else if (ins.on_done == isa::OnDone::Activate) {
    active_ |= bit(ins.done_task);
  } else if (ins.on_done == isa::OnDone::Unblock) {
    blocked_ &= ~bit(ins.done_task);
  }
  live_slots_ &= ~(std::uint64_t{1} << (&op - ops_.data()));
  const auto at = std::find(live_.begin(), live_.end(), static_cast<std::uint8_t>(&op - ops_.data()));
  // A retiring operation is done, so it lies outside the run of datapath stalls.
  const auto pos = static_cast<std::size_t>(at - live_.begin());
  if (fpu_run_begin_ != kNoRun) {
    if (pos < fpu_run_begin_) {
      --fpu_run_begin_;
      --fpu_run_end_;
    } else if (pos < fpu_run_end_) {
      fpu_run_begin_ = kNoRun;
    }
  }
  live_.erase(at);
  if (op.in_slot >= 0 || op.fab_out) recompute_held_colors();
}

bool Core::behind_own_holders(const Instruction& ins, std::uint64_t in, std::uint64_t out) const {
  // An instruction of an ordered microthread takes its steps after its predecessors' last, so
  // it may issue while they hold its colors, but not while another thread holds one.
  if (!ins.async || ins.ut == Instruction::kUnordered) return false;
  for (const auto* list : {&live_, &parked_})
    for (std::uint8_t i : *list) {
      const VectorOp& o = ops_[i];
      if (((o.in_bit & in) || (o.out_bit & out)) && o.ut != ins.ut) return false;
    }
  return true;
}

void Core::recompute_held_colors() {
  held_in_ = held_out_ = 0;
  for (const auto* list : {&live_, &parked_})
    for (std::uint8_t i : *list) {
      held_in_ |= ops_[i].in_bit;
      held_out_ |= ops_[i].out_bit;
    }
}

std::string Core::describe_state() const {
  std::string s = fmt::format("PE ({}, {}):", coord_.x, coord_.y);
  if (!program_) return s + " no program";
  auto op_state = [&](const VectorOp& op) {
    std::string t = fmt::format("{}: element {} of {}", program_->describe(op.pc), op.next, op.n);
    if (op.in_slot >= 0) t += fmt::format(", reads color {}", op.d[op.in_slot].color);
    if (op.fab_out) t += fmt::format(", writes color {}", op.d[0].color);
    if (op.after_pred) t += fmt::format(", waits for the previous operation of microthread {}", op.ut);
    if (op.last_stall >= 0) t += fmt::format(", stalled: {}", stall_name(static_cast<Stall>(op.last_stall)));
    return t;
  };
  if (running_ >= 0) {
    const isa::TaskDecl* t = program_->task(static_cast<std::uint8_t>(running_));
    s += fmt::format(" task '{}'", t ? t->name : "?");
    if (live_slots_ & 1u) {
      s += " waits for " + op_state(ops_[0]);
    } else {
      s += " at " + program_->describe(pc_);
      if (main_stall_ >= 0) s += fmt::format(", stalled: {}", stall_name(static_cast<Stall>(main_stall_)));
    }
  } else {
    s += " no task running";
  }
  for (std::size_t i = 1; i < ops_.size(); ++i)
    if ((live_slots_ >> i) & 1u) s += "; async " + op_state(ops_[i]);
  return s;
}

}  // namespace wafersim::hw

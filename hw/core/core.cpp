#include "hw/core/core.h"

#include <fmt/format.h>

#include <algorithm>

#include "hw/numerics/elementary.h"
#include "hw/numerics/softfloat.h"
#include "sim/config/diagnostics.h"
#include "sim/errors.h"
#include "sim/units/quantity.h"

namespace wafersim::hw {
using isa::Instruction;
using isa::Op;
using isa::Operand;
using sim::Cycle;

CoreParams::CoreParams(const PeConfig& c, std::uint32_t n_colors)
    : pe(c),
      banks(c.sram),
      colors(n_colors),
      sram_bytes(static_cast<std::uint32_t>(c.sram.size.bytes())),
      color_mask(n_colors >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n_colors) - 1) {}

Cycle CoreParams::latency(isa::LatencyClass c) const {
  switch (c) {
    case isa::LatencyClass::Scalar:
      return pe.latency.scalar;
    case isa::LatencyClass::Mov:
      return pe.latency.mov;
    case isa::LatencyClass::Add:
      return pe.latency.add;
    case isa::LatencyClass::Mul:
      return pe.latency.mul;
    case isa::LatencyClass::Fmac:
      return pe.latency.fmac;
    case isa::LatencyClass::Exp:
      return pe.latency.exp;
    case isa::LatencyClass::Recip:
      return pe.latency.recip;
  }
  return pe.latency.scalar;
}

std::uint32_t CoreParams::lanes(DType t) const {
  switch (t) {
    case DType::F16:
    case DType::U16:
      return pe.simd_lanes.fp16;
    case DType::BF16:
      return pe.simd_lanes.bf16;
    case DType::F32:
    case DType::U32:
      return pe.simd_lanes.fp32;
  }
  return 1;
}

namespace {
// Bytes of [0, capacity) covered by the program's data and its memory descriptors as loaded.
std::uint32_t footprint(const isa::Program& p, std::uint32_t capacity) {
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;  // [begin, end)
  for (const auto& d : p.data)
    spans.emplace_back(d.addr, std::int64_t{d.addr} + static_cast<std::int64_t>(d.bytes.size()));
  for (const auto& decl : p.descriptors) {
    const isa::Descriptor& d = decl.init;
    const std::int64_t esize = size_of(d.dtype);
    if (d.kind == isa::Descriptor::Kind::Circ) {
      spans.emplace_back(d.base, d.base + std::int64_t{d.size} * esize);
    } else if (d.kind == isa::Descriptor::Kind::Mem && d.length > 0) {
      const std::int64_t a = d.address(0), b = d.address(d.length - 1);
      spans.emplace_back(std::min(a, b), std::max(a, b) + esize);
    }
  }
  std::sort(spans.begin(), spans.end());
  std::int64_t used = 0, covered = 0;  // covered: the end of the union so far
  for (auto [b, e] : spans) {
    b = std::clamp<std::int64_t>(std::max(b, covered), 0, capacity);
    e = std::clamp<std::int64_t>(e, 0, capacity);
    if (e > b) {
      used += e - b;
      covered = e;
    }
  }
  return static_cast<std::uint32_t>(used);
}
}  // namespace

Core::Core(PeCoord coord, const CoreParams& params) : coord_(coord), p_(&params), sram_(params.sram_bytes) {}

void Core::fault(const std::string& what, std::uint32_t pc) const {
  throw sim::SimulationError(fmt::format("PE ({}, {}): {} ({})", coord_.x, coord_.y, what, program_->describe(pc)));
}

void Core::address_fault(std::int64_t addr, unsigned bytes, std::uint32_t pc) const {
  if (addr < 0 || !sram_.in_range(static_cast<std::uint64_t>(addr), bytes))
    fault(fmt::format("SRAM access at address {}{:#x} ({} bytes) is beyond the {} SRAM", addr < 0 ? "-" : "",
                      addr < 0 ? -addr : addr, bytes, units::format(p_->pe.sram.size)),
          pc);
  fault(fmt::format("misaligned {}-byte SRAM access at address {:#x}", bytes, addr), pc);
}

void Core::load(std::shared_ptr<const isa::Program> program, Cycle now, bool replace) {
  using sim::config::ConfigError;
  using sim::config::Diagnostic;
  std::vector<Diagnostic> errors;
  const std::string pe = fmt::format("PE ({}, {})", coord_.x, coord_.y);
  if (program_ && !replace) throw sim::InputError(fmt::format("{} already has a program ({})", pe, program_->file));
  if (program_ && busy())
    throw sim::InputError(fmt::format("{} is still running {}: its program cannot be replaced", pe, program_->file));
  for (const auto& d : program->data)
    if (!sram_.in_range(d.addr, d.bytes.size()))
      errors.push_back({d.location, "",
                        fmt::format("{} bytes at address {:#x} do not fit the {} SRAM of {}", d.bytes.size(), d.addr,
                                    units::format(p_->pe.sram.size), pe)});
  for (const auto& d : program->descriptors)
    if (d.init.is_fabric() && d.init.color >= p_->colors)
      errors.push_back(
          {d.location, "", fmt::format("color {} is beyond the platform's {} colors", d.init.color, p_->colors)});
  for (const auto& t : program->tasks)
    if (t.data && t.color >= p_->colors)
      errors.push_back(
          {t.location, "", fmt::format("color {} is beyond the platform's {} colors", t.color, p_->colors)});
  for (std::size_t pc = 0; pc < program->code.size(); ++pc) {
    const Instruction& ins = program->code[pc];
    if (ins.ut != Instruction::kUnordered && ins.ut >= p_->pe.microthreads)
      errors.push_back(
          {program->where[pc], "",
           fmt::format("microthread {} is beyond the platform's {} microthreads", ins.ut, p_->pe.microthreads)});
    const int slot = ins.op == Op::Send ? 0 : ins.op == Op::Recv ? 1 : -1;
    if (slot >= 0 && ins.ops[slot].imm >= p_->colors)
      errors.push_back({program->where[pc], "",
                        fmt::format("color {} is beyond the platform's {} colors", ins.ops[slot].imm, p_->colors)});
  }
  if (!errors.empty()) throw ConfigError(errors);
  if (program_) {
    active_ = blocked_ = 0;
    std::fill(std::begin(regs_), std::end(regs_), 0u);
    host_activations_.clear();
  }
  program_ = std::move(program);
  started_ = 0;
  local_tasks_ = data_colors_ = 0;
  for (const auto& t : program_->tasks)
    (t.data ? data_colors_ : local_tasks_) |= std::uint64_t{1} << (t.data ? t.color : t.id);
  dsd_.clear();
  for (const auto& d : program_->descriptors) dsd_.push_back(d.init);
  for (const auto& d : program_->data)
    if (!p_->timing_only || d.control) sram_.write(d.addr, d.bytes.data(), static_cast<std::uint32_t>(d.bytes.size()));
  for (auto id : program_->entry_tasks) host_activate(id, now);
  ops_.assign(1, VectorOp{});  // the synchronous slot; microthread slots are added when first used
  live_slots_ = 0;
  live_.clear();
  parked_.clear();
  released_ = false;
  fpu_run_begin_ = kNoRun;
  earliest_done_ = Cycle::never();
  maybe_in_ = ~std::uint64_t{0};
  data_front_ = 0;
  sram_in_use_ = footprint(*program_, sram_.capacity());
}

CoreCounters Core::counters_at(Cycle at) const {
  CoreCounters k = c_;
  if (!slept_from_.is_never() && at > slept_from_) {
    const std::uint64_t n = (at - slept_from_).count();
    if (sleep_busy_) {
      k.busy_cycles += n;
      k.finish_cycle = at.count();
    }
    for (int s = 0; s < kStallCauses; ++s) k.stall[s] += n * sleep_stalls_[s];
  }
  return k;
}

std::vector<const isa::TaskDecl*> Core::tasks_never_started() const {
  std::vector<const isa::TaskDecl*> out;
  if (!program_) return out;
  for (const auto& t : program_->tasks)
    if (!(started_ >> t.id & 1)) out.push_back(&t);
  return out;
}

void Core::host_activate(std::uint8_t task, Cycle at) {
  if (!program_)
    throw sim::InputError(fmt::format("PE ({}, {}) has no program: cannot activate task {}", coord_.x, coord_.y, task));
  const isa::TaskDecl* t = program_->task(task);
  if (!t || t->data)
    throw sim::InputError(
        fmt::format("PE ({}, {}): task {} is not a local task of {}", coord_.x, coord_.y, task, program_->file));
  host_activations_.emplace_back(at, task);
}

bool Core::busy() const { return running_ >= 0 || !live_.empty() || !parked_.empty(); }

void Core::count_stall(Stall s, std::uint8_t* sleep_counts) {
  ++c_.stall[static_cast<int>(s)];
  ++sleep_counts[static_cast<int>(s)];
}

bool Core::credited(Cycle at) {
  // Every live operation and the main thread took their turn in the last tick, whose stalls
  // sleep_stalls_ holds.
  if (sleep_stalls_[static_cast<int>(Stall::FabricOut)] != 0) return true;
  credit_at_ = std::max(credit_at_, at);
  return false;
}

void Core::catch_up(Cycle now) {
  if (!slept_from_.is_never() && now > slept_from_) {
    const std::uint64_t k = (now - slept_from_).count();
    if (sleep_busy_) {
      c_.busy_cycles += k;
      c_.finish_cycle = now.count();
    }
    for (int s = 0; s < kStallCauses; ++s) c_.stall[s] += k * sleep_stalls_[s];
  }
  slept_from_ = Cycle::never();
}

namespace {
bool retryable(Stall s) {
  return s != Stall::FabricIn && s != Stall::FabricOut && s != Stall::Queue && s != Stall::Microthread;
}
}  // namespace

template <class Want>
void Core::admit_released(Cycle next_cycle, Want&& want) {
  released_ = false;
  for (std::size_t i = 0; i < parked_.size();) {
    const std::uint8_t slot = parked_[i];
    VectorOp& op = ops_[slot];
    if (op.after_pred) {
      ++i;
      continue;
    }
    parked_.erase(parked_.begin() + static_cast<long>(i));
    const auto at = std::upper_bound(live_.begin(), live_.end(), op.seq,
                                     [&](std::uint32_t seq, std::uint8_t s) { return seq < ops_[s].seq; });
    const auto pos = static_cast<std::size_t>(at - live_.begin());
    live_.insert(at, slot);
    if (fpu_run_begin_ != kNoRun) {
      if (pos <= fpu_run_begin_) {
        ++fpu_run_begin_;
        ++fpu_run_end_;
      } else if (pos < fpu_run_end_) {
        fpu_run_begin_ = kNoRun;
      }
    }
    // Released after its predecessor's last step in this tick: not due before the next cycle
    // (or, with no elements, done at done_at).
    if (op.done_at.is_never()) {
      op.last_stall = -1;
      want(std::max(op.next_step, next_cycle));
    } else {
      want(op.done_at);
    }
  }
}

Cycle Core::tick(Cycle now, CycleResources& r) {
  catch_up(now);
  r.reset();
  std::uint8_t stalls[kStallCauses] = {};
  Cycle wake = Cycle::never();
  auto want = [&](Cycle c) { wake = std::min(wake, c); };
  const Cycle next_cycle = now + Cycle(1);

  if (earliest_done_ <= now) {
    for (std::uint64_t m = live_slots_; m; m &= m - 1) {  // in slot order
      VectorOp& op = ops_[static_cast<std::size_t>(__builtin_ctzll(m))];
      if (op.done_at <= now) retire(op, now);
    }
    earliest_done_ = Cycle::never();
    for (std::uint8_t i : live_) earliest_done_ = std::min(earliest_done_, ops_[i].done_at);
  }
  const bool busy_at_start = busy();

  for (std::size_t i = 0; i < host_activations_.size();) {
    if (host_activations_[i].first <= now) {
      active_ |= std::uint64_t{1} << host_activations_[i].second;
      host_activations_.erase(host_activations_.begin() + static_cast<long>(i));
    } else {
      want(host_activations_[i].first);
      ++i;
    }
  }

  for (std::size_t i = 0; i < arrivals_.size();) {
    if (arrivals_[i].first <= now) {
      maybe_in_ |= std::uint64_t{1} << arrivals_[i].second;
      arrivals_[i] = arrivals_.back();
      arrivals_.pop_back();
    } else {
      want(arrivals_[i].first);
      ++i;
    }
  }

  take_control_wavelet(now, r);
  if (r.ramp_in) want(next_cycle);

  // The main thread: start a task when none runs, then issue one instruction.
  if (running_ < 0) select_task(now, r);
  if (running_ >= 0 && !(live_slots_ & 1u)) {
    if (now < ready_at_) {
      want(ready_at_);
    } else if (main_stall_ == static_cast<int>(Stall::Microthread) &&
               live_.size() + parked_.size() >= p_->pe.microthreads) {
      // The vector instruction that found every microthread busy last tick still does: none
      // has retired since (only this thread issues), so it stalls again as it would in execute().
      count_stall(Stall::Microthread, stalls);
    } else {
      Stall why = Stall::SramPort;
      const Step s = execute(now, r, &why);
      main_stall_ = s == Step::Stalled ? static_cast<int>(why) : -1;
      if (s == Step::Stalled) {
        count_stall(why, stalls);
        if (retryable(why)) want(next_cycle);
      } else if (running_ >= 0 && !(live_slots_ & 1u)) {
        if (ready_at_ < r.horizon) run_ahead(r);
        want(std::max(ready_at_, next_cycle));
      } else if (running_ < 0) {
        want(next_cycle);  // a task ended: the scheduler looks again
      }
    }
  }

  // Vector operations, oldest first. The operations at positions [fpu_run_begin_,
  // fpu_run_end_) stalled on the busy datapath in the last tick and have not changed since (no
  // step, still due, not done): with the datapath taken again when the visit reaches them, they
  // stall again, and are counted without a visit.
  const std::size_t n_live = live_.size();
  std::size_t run = kNoRun;                       // start of this tick's current run of datapath stalls
  std::size_t best_begin = kNoRun, best_end = 0;  // this tick's longest run (the first of equals)
  auto close_run = [&](std::size_t end) {
    if (run == kNoRun) return;
    if (best_begin == kNoRun || end - run > best_end - best_begin) {
      best_begin = run;
      best_end = end;
    }
    run = kNoRun;
  };
  // The cycles before which the main thread does nothing, so that an operation alone live may
  // step ahead up to them: until a live operation retires (none does before the last step of
  // one alone live) when it waits for a synchronous one or for a microthread; until its next
  // instruction when it waits for that one's cycle.
  Cycle ahead_until{0};
  if (running_ >= 0 && host_activations_.empty() && observer_ == nullptr && n_live == 1) {
    if ((live_slots_ & 1u) ||
        (main_stall_ == static_cast<int>(Stall::Microthread) && live_.size() + parked_.size() >= p_->pe.microthreads))
      ahead_until = r.horizon;
    else if (ready_at_ > next_cycle)
      ahead_until = std::min(r.horizon, ready_at_);
  }
  for (std::size_t pos = 0; pos < n_live;) {
    if (pos == fpu_run_begin_ && r.fpu) {
      const auto k = static_cast<std::uint8_t>(fpu_run_end_ - pos);
      c_.stall[static_cast<int>(Stall::Fpu)] += k;
      stalls[static_cast<int>(Stall::Fpu)] += k;
      want(next_cycle);
      if (run == kNoRun) run = pos;
      pos = fpu_run_end_;
      continue;
    }
    VectorOp& op = ops_[live_[pos]];
    if (!op.done_at.is_never()) {
      want(op.done_at);
      close_run(pos);
      ++pos;
      continue;
    }
    Stall why = Stall::SramPort;
    // Not due, or waiting for the datapath (most operations of a busy core), decided here
    // without a call; step() takes the rest.
    Step s = Step::Wait;
    bool datapath_busy = false;
    if (now < op.next_step) {
      s = Step::Wait;
    } else if (op.info->fpu && r.fpu) {
      why = Stall::Fpu;
      s = Step::Stalled;
      datapath_busy = true;
    } else {
      s = step(op, now, r, &why);
    }
    if (!datapath_busy)
      close_run(pos);
    else if (run == kNoRun)
      run = pos;
    op.last_stall = s == Step::Stalled ? static_cast<int>(why) : -1;
    if (s == Step::Stalled) {
      count_stall(why, stalls);
      if (retryable(why)) want(next_cycle);
    } else if (!op.done_at.is_never()) {
      want(op.done_at);
    } else {
      if (s == Step::Progress && op.next_step < ahead_until && may_run_ahead(op)) run_ahead_vector(op, r, ahead_until);
      want(std::max(op.next_step, next_cycle));
    }
    ++pos;
  }
  close_run(n_live);
  fpu_run_begin_ = best_begin;
  fpu_run_end_ = best_end;
  if (released_) admit_released(next_cycle, want);

  if (running_ < 0 && program_) {
    if (active_ & ~blocked_) want(next_cycle);
    if (const std::uint64_t colors = startable_colors())
      for (const auto& t : program_->tasks) {
        const std::uint64_t cbit = std::uint64_t{1} << t.color;
        if (t.data && (colors & cbit) && !(blocked_ & (std::uint64_t{1} << t.id)) && ramp_->has(Color(t.color)))
          want(next_cycle);
      }
  }

  if (stalls[static_cast<int>(Stall::FabricOut)] && credit_at_ > now) want(credit_at_);
  const bool is_busy = busy();
  if (busy_at_start || is_busy) {
    ++c_.busy_cycles;
    c_.finish_cycle = now.count() + 1;
  }
  slept_from_ = next_cycle;
  sleep_busy_ = is_busy;
  std::copy(stalls, stalls + kStallCauses, sleep_stalls_);
  return wake <= now ? next_cycle : wake;
}

void Core::scan_control_wavelets(Cycle now, CycleResources& r) {
  // Colors in increasing order up to the first whose front is a control wavelet, which is
  // taken: those below it are found empty or holding data (a front seen to be data stays so
  // until this core pops it).
  const std::uint64_t scan = maybe_in_ & ~data_front_ & p_->color_mask;
  const std::uint64_t visible = ramp_->visible(), control = ramp_->control_fronts() & scan;
  const std::uint64_t below = control ? (control & (~control + 1)) - 1 : ~std::uint64_t{0};
  maybe_in_ &= ~(scan & below & ~visible);
  data_front_ |= scan & below & visible;
  if (!control) return;
  const auto c = static_cast<std::uint32_t>(__builtin_ctzll(control));
  const Wavelet w = ramp_->front(Color(static_cast<std::uint8_t>(c)));
  ramp_->pop(Color(static_cast<std::uint8_t>(c)), now);
  r.ramp_in = true;
  ++c_.wavelets_in;
  const auto id = static_cast<std::uint8_t>(w.payload & (isa::kMaxTasks - 1));
  const isa::TaskDecl* t = program_->task(id);
  if (!t || t->data)
    throw sim::SimulationError(
        fmt::format("PE ({}, {}): a control wavelet on color {} activates task {}, which is not a "
                    "local task of {}",
                    coord_.x, coord_.y, c, id, program_->file));
  active_ |= std::uint64_t{1} << id;
}

bool Core::select_task(Cycle now, CycleResources& r) {
  if (!program_) return false;
  // Nothing to start (the walk below would pass over every task).
  if (!(active_ & ~blocked_ & local_tasks_) && (r.ramp_in || !startable_colors())) return false;
  for (const auto& t : program_->tasks) {
    const std::uint64_t bit = std::uint64_t{1} << t.id;
    if (blocked_ & bit) continue;
    if (!t.data) {
      if (!(active_ & bit)) continue;
      active_ &= ~bit;
    } else {
      const std::uint64_t cbit = std::uint64_t{1} << t.color;
      if ((held_in_ & cbit) || r.ramp_in || !(maybe_in_ & cbit) || !ramp_) continue;
      const Color color(t.color);
      if (!(ramp_->visible() & cbit)) {
        maybe_in_ &= ~cbit;
        continue;
      }
      if (ramp_->control_fronts() & cbit) continue;
      const Wavelet w = ramp_->front(color);
      ramp_->pop(color, now);
      data_front_ &= ~cbit;
      r.ramp_in = true;
      ++c_.wavelets_in;
      regs_[0] = w.payload;
    }
    running_ = t.id;
    started_ |= std::uint64_t{1} << t.id;
    task_start_ = now;
    pc_ = t.entry;
    ready_at_ = now + p_->pe.latency.task_switch;
    ++c_.task_activations;
    return true;
  }
  return false;
}

std::uint32_t Core::operand(const Operand& o) const {
  return o.kind == Operand::Kind::Reg ? regs_[o.reg] : static_cast<std::uint32_t>(o.imm);
}

namespace {

bool compare(isa::Cond c, std::uint32_t a, std::uint32_t b) {
  const auto sa = static_cast<std::int32_t>(a), sb = static_cast<std::int32_t>(b);
  switch (c) {
    case isa::Cond::Eq:
      return a == b;
    case isa::Cond::Ne:
      return a != b;
    case isa::Cond::Lt:
      return sa < sb;
    case isa::Cond::Le:
      return sa <= sb;
    case isa::Cond::Gt:
      return sa > sb;
    case isa::Cond::Ge:
      return sa >= sb;
    case isa::Cond::Ltu:
      return a < b;
    case isa::Cond::Leu:
      return a <= b;
    case isa::Cond::Gtu:
      return a > b;
    case isa::Cond::Geu:
      return a >= b;
  }
  return false;
}

bool fcompare(isa::Cond c, DType t, std::uint32_t a, std::uint32_t b) {
  using namespace numerics;
  switch (c) {
    case isa::Cond::Eq:
      return eq(t, a, b);
    case isa::Cond::Ne:
      return !eq(t, a, b);
    case isa::Cond::Lt:
      return lt(t, a, b);
    case isa::Cond::Le:
      return le(t, a, b);
    case isa::Cond::Gt:
      return lt(t, b, a);
    case isa::Cond::Ge:
      return le(t, b, a);
    default:
      return false;
  }
}

}  // namespace

void Core::report_task(const isa::Program& prog, Cycle end) const {
  if (const isa::TaskDecl* t = prog.task(static_cast<std::uint8_t>(running_)))
    observer_->task_ran(coord_, prog, *t, task_start_, end);
}

namespace {
constexpr int kRunAhead = 16;  // instructions at most per tick
}  // namespace

void Core::run_ahead(CycleResources& r) {
  if (observer_ != nullptr) return;  // an observer sees each instruction in its own cycle
  for (int k = 0; k < kRunAhead && running_ >= 0 && !(live_slots_ & 1u) && ready_at_ < r.horizon; ++k) {
    if (pc_ >= program_->code.size()) return;
    const Instruction& ins = program_->code[pc_];
    if (ins.vector || !isa::is_register_only(ins.op)) return;
    Stall why = Stall::SramPort;
    (void)execute(ready_at_, r, &why);
  }
}

Core::Step Core::execute(Cycle now, CycleResources& r, Stall* why) {
  const isa::Program& prog = *program_;
  if (pc_ >= prog.code.size())
    throw sim::SimulationError(fmt::format("PE ({}, {}): task {} ran past the end of {} (missing 'ret'?)", coord_.x,
                                           coord_.y, running_, prog.file));
  const Instruction& ins = prog.code[pc_];
  const isa::OpInfo& info = isa::info(ins.op);
  Cycle latency = p_->latency(info.latency);
  std::uint32_t next_pc = pc_ + 1;
  auto rd = [&]() -> std::uint32_t& { return regs_[ins.ops[0].reg]; };
  auto ra = [&]() { return regs_[ins.ops[1].reg]; };
  auto arg = [&](int k) { return operand(ins.ops[k]); };
  auto fabric_color = [&](std::int64_t c) { return Color(static_cast<std::uint8_t>(c)); };
  auto stall = [&](Stall s) {
    *why = s;
    return Step::Stalled;
  };
  const std::uint32_t fmask = mask_of(ins.type);
  auto fa = [&]() { return ra() & fmask; };
  auto fb = [&]() { return arg(2) & fmask; };

  if (ins.vector) return issue_vector(ins, now, why);

  switch (ins.op) {
    case Op::Nop:
      break;
    case Op::Mov:
      rd() = arg(1);
      break;
    case Op::Add:
      rd() = ra() + arg(2);
      break;
    case Op::Sub:
      rd() = ra() - arg(2);
      break;
    case Op::Mul:
      rd() = ra() * arg(2);
      break;
    case Op::And:
      rd() = ra() & arg(2);
      break;
    case Op::Or:
      rd() = ra() | arg(2);
      break;
    case Op::Xor:
      rd() = ra() ^ arg(2);
      break;
    case Op::Shl:
      rd() = ra() << (arg(2) & 31);
      break;
    case Op::Shr:
      rd() = ra() >> (arg(2) & 31);
      break;
    case Op::Sra:
      rd() = static_cast<std::uint32_t>(static_cast<std::int32_t>(ra()) >> (arg(2) & 31));
      break;
    case Op::Cmp:
      rd() = compare(ins.cond, ra(), arg(2)) ? 1 : 0;
      break;
    case Op::Branch:
      if (compare(ins.cond, regs_[ins.ops[0].reg], arg(1))) next_pc = static_cast<std::uint32_t>(ins.ops[2].imm);
      break;
    case Op::Jmp:
      next_pc = static_cast<std::uint32_t>(ins.ops[0].imm);
      break;
    case Op::Ld:
    case Op::St: {
      const Operand& m = ins.op == Op::Ld ? ins.ops[1] : ins.ops[0];
      const std::int64_t a = (m.reg == Operand::kNoBase ? 0 : std::int64_t{regs_[m.reg]}) + m.imm;
      const std::uint32_t addr = checked_address(a, ins.width, pc_);
      const std::uint32_t word = addr / p_->banks.word_bytes();
      const auto res = ins.op == Op::Ld ? r.port.read(word) : r.port.write(word);
      if (res == PortCycle::Result::NoPort) return stall(Stall::SramPort);
      if (res == PortCycle::Result::BankBusy) return stall(Stall::SramBank);
      if (ins.op == Op::Ld) {
        if (res == PortCycle::Result::Ok) ++c_.sram_reads;
        c_.sram_bytes_read += ins.width;
        regs_[ins.ops[0].reg] = sram_.load(addr, ins.width);
      } else {
        ++c_.sram_writes;
        c_.sram_bytes_written += ins.width;
        sram_.store(addr, ins.width, regs_[ins.ops[1].reg] & (ins.width == 4 ? 0xffffffffu : 0xffffu));
      }
      break;
    }
    case Op::Tsc:
      rd() = ins.width ? static_cast<std::uint32_t>((now.count() >> 32) & 0xffff)
                       : static_cast<std::uint32_t>(now.count());
      break;
    case Op::Send: {
      const Color c = fabric_color(ins.ops[0].imm);
      if (held_out_ & (std::uint64_t{1} << c.id())) return stall(Stall::Queue);
      if (!ramp_) fault("send on a PE with no fabric attached", pc_);
      if (!ramp_->can_send(c)) return stall(Stall::FabricOut);
      if (r.ramp_out) return stall(Stall::Ramp);
      ramp_->send(Wavelet{arg(1), c, ins.control}, now);
      r.ramp_out = true;
      ++c_.wavelets_out;
      break;
    }
    case Op::Recv: {
      const Color c = fabric_color(ins.ops[1].imm);
      if (held_in_ & (std::uint64_t{1} << c.id())) return stall(Stall::Queue);
      if (!ramp_) fault("recv on a PE with no fabric attached", pc_);
      if (!data_in_front(c)) return stall(Stall::FabricIn);
      if (r.ramp_in) return stall(Stall::Ramp);
      rd() = ramp_->front(c).payload;
      ramp_->pop(c, now);
      data_front_ &= ~(std::uint64_t{1} << c.id());
      r.ramp_in = true;
      ++c_.wavelets_in;
      break;
    }
    case Op::Activate:
      active_ |= std::uint64_t{1} << ins.ops[0].imm;
      break;
    case Op::Block:
      blocked_ |= std::uint64_t{1} << ins.ops[0].imm;
      break;
    case Op::Unblock:
      blocked_ &= ~(std::uint64_t{1} << ins.ops[0].imm);
      break;
    case Op::Ret:
      ++c_.instructions;
#ifndef WAFERSIM_NO_TRACE_HOOKS
      if (__builtin_expect(observer_ != nullptr, 0)) report_task(prog, now + Cycle(1));
#endif
      running_ = -1;
      return Step::Progress;
    case Op::DsdBase:
    case Op::DsdLen:
    case Op::DsdAdd:
    case Op::DsdStride:
    case Op::DsdColor: {
      isa::Descriptor& d = dsd_[static_cast<std::size_t>(ins.ops[0].imm)];
      const std::uint32_t v = arg(1);
      const std::string& dname = prog.descriptors[static_cast<std::size_t>(ins.ops[0].imm)].name;
      if (ins.op == Op::DsdBase) {
        if (v % size_of(d.dtype))
          fault(fmt::format("base address {:#x} of '{}' is not aligned to {} bytes", v, dname, size_of(d.dtype)), pc_);
        d.base = v;
      } else if (ins.op == Op::DsdLen) {
        d.length = v;
      } else if (ins.op == Op::DsdStride) {
        d.stride = static_cast<std::int32_t>(v);
      } else if (ins.op == Op::DsdColor) {
        if (v >= p_->colors) fault(fmt::format("color {} is beyond the platform's {} colors", v, p_->colors), pc_);
        d.color = static_cast<std::uint8_t>(v);
      } else if (d.kind == isa::Descriptor::Kind::Circ) {
        const auto k = static_cast<std::int64_t>(static_cast<std::int32_t>(v));
        const auto size = static_cast<std::int64_t>(d.size);
        d.start = static_cast<std::uint32_t>(((d.start + k) % size + size) % size);
      } else {
        d.base = static_cast<std::uint32_t>(d.base +
                                            static_cast<std::int64_t>(static_cast<std::int32_t>(v)) * size_of(d.dtype));
      }
      break;
    }
    case Op::FMov:
      rd() = fa();
      break;
    case Op::FAdd:
      rd() = numerics::add(ins.type, fa(), fb());
      break;
    case Op::FSub:
      rd() = numerics::sub(ins.type, fa(), fb());
      break;
    case Op::FMul:
      rd() = numerics::mul(ins.type, fa(), fb());
      break;
    case Op::FMax:
      rd() = numerics::max(ins.type, fa(), fb());
      break;
    case Op::FMin:
      rd() = numerics::min(ins.type, fa(), fb());
      break;
    case Op::FNeg:
      rd() = numerics::neg(ins.type, fa());
      break;
    case Op::FExp:
      rd() = numerics::exp(ins.type, fa());
      break;
    case Op::FRecip:
      rd() = numerics::recip(ins.type, fa());
      break;
    case Op::FCvt:
      rd() = numerics::convert(ins.type, ins.type2, ra() & mask_of(ins.type2));
      break;
    case Op::FCmp:
      rd() = fcompare(ins.cond, ins.type, fa(), fb()) ? 1 : 0;
      break;
    case Op::FMac: {
      std::uint32_t b = arg(2) & mask_of(ins.type2), c = arg(3) & mask_of(ins.type2);
      if (ins.type2 != ins.type) {
        b = numerics::convert(ins.type, ins.type2, b);
        c = numerics::convert(ins.type, ins.type2, c);
      }
      rd() = numerics::fma(ins.type, b, c, fa());
      break;
    }
    default:
      fault("instruction needs a descriptor operand", pc_);
  }
  ++c_.instructions;
  c_.flops += info.flops;
  if (info.latency != isa::LatencyClass::Scalar) ++c_.lane_ops[lane_kind(info.latency, ins.type)];
  pc_ = next_pc;
  ready_at_ = now + latency;
  return Step::Progress;
}

}  // namespace wafersim::hw

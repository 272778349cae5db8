#pragma once
// One PE core as a plain C++ object: registers, tasks, the main thread, vector operations
// on microthreads, and the SRAM. Ticked by its CoreArray; no SystemC inside.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hw/core/core_counters.h"
#include "hw/core/core_observer.h"
#include "hw/core/slot_list.h"
#include "hw/isa/program.h"
#include "hw/pe_config.h"
#include "hw/ramp.h"
#include "hw/sram/bank_model.h"
#include "hw/sram/sram.h"
#include "hw/types.h"
#include "sim/types.h"

namespace wafersim::hw {

// Everything the cores of one array share: configuration and derived constants.
struct CoreParams {
  explicit CoreParams(const PeConfig& pe, std::uint32_t colors);
  PeConfig pe;
  BankModel banks;
  std::uint32_t colors;
  std::uint32_t sram_bytes;
  std::uint64_t color_mask;  // a bit per color of the fabric
  // Timing only: vector operations move no values (no SRAM loads or stores, wavelets sent
  // with payload 0) and program data is not stored, so SRAM pages are allocated only by
  // scalar stores and the host. Cycle counts equal the functional run's as long as control
  // flow and addresses do not depend on those values.
  bool timing_only = false;
  [[nodiscard]] sim::Cycle latency(isa::LatencyClass c) const;
  [[nodiscard]] std::uint32_t lanes(DType t) const;
};

// The resources all threads of one core share within one cycle.
struct CycleResources {
  explicit CycleResources(const BankModel& m) : port(m) {}
  void reset() {
    port.reset();
    ramp_in = ramp_out = fpu = false;
  }
  PortCycle port;
  bool ramp_in = false, ramp_out = false, fpu = false;
  // Main threads may run ahead (Core::run_ahead) to instructions of cycles before this one
  // (Cycle(0): none); set by the core array for the whole sweep, not reset per core.
  sim::Cycle horizon{0};
};

// A vector instruction in flight: descriptor snapshots taken at issue, and its progress.
struct VectorOp {
  struct Access {
    std::uint32_t word;
    bool write;
  };
  // The first 64 bytes (the sweep prefetches the line they start in; an operation is not
  // aligned to lines): what tick() reads of every live operation, and what the searches by
  // microthread and by held color read. (Whether it is live: Core::live_slots_.)
  bool sync = false;  // the issuing task waits for it
  // Ordered microthread (isa::Instruction::kUnordered: none). `after_pred`: an older operation
  // of the same microthread still has steps to take, so this one takes none (it waits).
  std::uint8_t ut = isa::Instruction::kUnordered;
  bool after_pred = false;
  int last_stall = -1;  // cause of the last stall (for reports)
  sim::Cycle next_step{0};
  sim::Cycle done_at = sim::Cycle::never();
  const isa::OpInfo* info = nullptr;
  std::uint64_t in_bit = 0, out_bit = 0;  // the color it reads from the fabric, writes to it (bit c; 0: none)
  std::uint32_t seq = 0;
  std::uint32_t n = 0, next = 0;
  // The rest.
  std::uint32_t steps = 0;  // steps taken
  sim::Cycle last_step{0};  // the cycle of its last step (once every step is taken)
  std::uint32_t pc = 0;
  const isa::Instruction* ins = nullptr;
  isa::Descriptor d[4];
  bool is_dsd[4] = {};
  std::uint32_t scalar[4] = {};
  std::uint32_t per_step = 1, interval = 1, latency = 0;
  int in_slot = -1;              // operand holding the fabric input
  std::uint32_t repeat = 1;      // elements per input wavelet (a step never spans two wavelets)
  std::uint32_t in_wavelet = 0;  // next % repeat: the elements of the front wavelet taken
  // The front wavelet's payload, once read (until the op pops it: the op holds its color, so
  // the front cannot change meanwhile).
  std::uint32_t front_payload = 0;
  bool has_front_payload = false;
  bool fab_out = false;
  bool sparse = false;
  // Per operand: a plain strided memory descriptor (not circular, not indexed by a sparse
  // stream), and the bytes between its consecutive elements.
  bool linear[4] = {};
  bool circ[4] = {};            // a circular memory operand: linear within a step that does not wrap
  std::uint8_t circ_slots = 0;  // bit k: circ[k]
  std::int64_t step_bytes[4] = {};
  // Per linear or circular memory operand: the byte address of element `next` (kept as `next`
  // advances).
  std::int64_t at[4] = {};
  std::int64_t circ_end[4] = {};  // per circular operand: one past the last byte of its buffer
  // For plan(): the memory operands in planning order (sources 1..3, then the destination);
  // per operand its element size, whether its consecutive elements are at most one port word
  // apart, and whether all its n elements lie in the SRAM, aligned (no per-step checks).
  std::uint8_t mem_slots[4] = {};
  std::uint8_t n_mem = 0;
  std::uint8_t esize[4] = {};
  bool dense[4] = {};
  bool in_range[4] = {};
  bool plain = false;  // every memory operand linear (or circular), dense and in range
  // Plain, and a step of per_step elements moves every memory operand by the same whole
  // number of port words (`word_shift`): such a step that does not wrap issues the previous
  // one's accesses shifted, with the same outcome on a cycle of its own (BankModel).
  bool shifts = false;
  std::int32_t word_shift = 0;
  bool fmac_fast = false;  // an FMAC of one type over linear or circular operands, scalars or a dense input
  bool fmac_f16 = false;   // fmac_fast in fp16 with y, a and b in memory and c a scalar or the input
  // Timing only, per element: bytes read from the SRAM, bytes written to it, a wavelet sent.
  std::uint8_t read_bytes = 0, written_bytes = 0;
  bool sends = false;
  std::uint8_t lane_kind = 0;  // the CoreCounters::lane_ops slot its elements count in
  std::uint32_t last_word[4] = {};
  bool has_last[4] = {};
  std::vector<Access> pending;  // [0, planned): the port accesses of the open step
  std::uint32_t planned = 0;
  sim::Cycle issued_at{0};  // the cycle it was issued (for traces)
  std::uint32_t issued = 0;
  bool open = false;
  std::uint32_t acc = 0;  // reduction accumulator
};

class Core {
 public:
  Core(PeCoord coord, const CoreParams& params);

  // Installs a program: descriptors and data from the program, entry tasks activated at `now`.
  // Throws ConfigError (file:line:col) when the program does not fit this PE. With `replace`,
  // an idle core's program is swapped for the next one (a compiled model's next layer): the
  // SRAM and the wavelets waiting on the ramp stay, registers and task state start afresh.
  void load(std::shared_ptr<const isa::Program> program, sim::Cycle now, bool replace = false);
  void attach(RampPort* ramp) { ramp_ = ramp; }

  // Contract: called once per cycle while the core is awake, with increasing `now`; returns
  // the next cycle at which the core has work of its own (now + 1, a later cycle) or
  // Cycle::never() when only an outside event (a wavelet, a credit, the host) can give it
  // work. catch_up(now) first accounts the cycles slept since the last tick exactly as if
  // the core had been ticked in each of them. Throws sim::SimulationError on a program error.
  sim::Cycle tick(sim::Cycle now, CycleResources& r);
  void catch_up(sim::Cycle now);
  // Cache hints for a sweep over many cores, issued a few cores ahead of tick(): the object's
  // own lines first, then (once those are in) what tick() reads through its pointers.
  void prefetch_object() const {
    for (std::size_t b = 0; b < sizeof(Core); b += 64) __builtin_prefetch(reinterpret_cast<const char*>(this) + b);
  }
  void prefetch_state() const {
    std::uint64_t m = live_slots_;  // the first line of the four lowest live slots
    for (int k = 0; k < 4 && m; ++k, m &= m - 1) __builtin_prefetch(&ops_[__builtin_ctzll(m)]);
    __builtin_prefetch(ramp_);
  }

  // Host and fabric events.
  void host_activate(std::uint8_t task, sim::Cycle at);
  // A wavelet on color c becomes visible at cycle `at` (the fabric's RampListener contract).
  void arrived(Color c, sim::Cycle at) { arrivals_.emplace_back(at, c.id()); }
  // Whether that wavelet can change what a tick before the core's own next wake does: not
  // while a data wavelet the core has seen is in front of c (the new one queues behind it
  // until the core pops that one, and a tick reads only fronts). A tick before `at` wakes the
  // core at `at` for every wavelet noted by arrived().
  [[nodiscard]] bool arrival_matters(Color c) const { return !((data_front_ >> c.id()) & 1u); }
  // A credit on an output color is usable from `at`: whether it can change what a tick before
  // the core's own next wake does (only when a thread is stalled on a full output). When not,
  // a tick before `at` that stalls on one wakes the core at `at`.
  bool credited(sim::Cycle at);

  [[nodiscard]] PeCoord coord() const { return coord_; }
  [[nodiscard]] bool loaded() const { return program_ != nullptr; }
  // The declared tasks of the loaded program that have not started once since it was loaded
  // (a task never activated usually means a route or an activation is missing).
  [[nodiscard]] std::vector<const isa::TaskDecl*> tasks_never_started() const;
  // A task is running or a vector operation is in flight.
  [[nodiscard]] bool busy() const;
  [[nodiscard]] Sram& sram() { return sram_; }
  [[nodiscard]] const Sram& sram() const { return sram_; }
  [[nodiscard]] const CoreCounters& counters() const { return c_; }
  // The counters as they will read once cycles [.., at) are accounted: a sleeping core's
  // cycles up to `at` added as catch_up(at) would add them. `at` must not precede the cycle
  // after the last tick. For tracing windows; the core is not changed.
  [[nodiscard]] CoreCounters counters_at(sim::Cycle at) const;
  // Bytes of SRAM the program occupies: the union of its data and of the memory its
  // descriptors cover as loaded.
  [[nodiscard]] std::uint32_t sram_in_use() const { return sram_in_use_; }
  // Vector-operation slots allocated: the synchronous one, and microthread slots as they are
  // first used, never more than 1 + the PE's microthreads.
  [[nodiscard]] std::size_t operation_slots_allocated() const { return ops_.capacity(); }
  // Reports tasks and vector operations to `observer` (null: none). Tracing only.
  void set_observer(CoreObserver* observer) { observer_ = observer; }
  [[nodiscard]] std::uint32_t reg(unsigned i) const { return regs_[i]; }
  // What the core is doing or waiting for (for end-of-run and deadlock reports).
  [[nodiscard]] std::string describe_state() const;

 private:
  enum class Step { Progress, Wait, Stalled };

  // main thread
  // Takes the first control wavelet in front of a color that may hold one (not known to hold
  // data), if any: the scan itself is out of line, called only when there is something to scan.
  void take_control_wavelet(sim::Cycle now, CycleResources& r) {
    if (ramp_ && (maybe_in_ & ~data_front_ & p_->color_mask)) scan_control_wavelets(now, r);
  }
  void scan_control_wavelets(sim::Cycle now, CycleResources& r);
  // A data wavelet is in front of color c on the ramp (which reads the fabric's masks only).
  [[nodiscard]] bool data_in_front(Color c) const {
    return ((ramp_->visible() & ~ramp_->control_fronts()) >> c.id()) & 1u;
  }
  // For a vector operation's input on color c: whether a data wavelet is in front, kept in
  // data_front_ once seen (a front seen to be data stays so until this core pops it).
  bool data_front_seen(Color c);
  // The payload of the wavelet in front of op's input on color c, read once per wavelet.
  std::uint32_t input_payload(VectorOp& op, Color c);
  bool select_task(sim::Cycle now, CycleResources& r);
  // Colors of the program's data tasks that may hold a wavelet no vector operation holds (none
  // without a ramp): a data task can start only on one of them.
  [[nodiscard]] std::uint64_t startable_colors() const { return ramp_ ? maybe_in_ & ~held_in_ & data_colors_ : 0; }
  Step execute(sim::Cycle now, CycleResources& r, Stall* why);
  Step issue_vector(const isa::Instruction& ins, sim::Cycle now, Stall* why);
  std::uint32_t operand(const isa::Operand& o) const;
  // vector operations
  void prepare(VectorOp& op, const isa::Instruction& ins, sim::Cycle now);
  // A step of `op`, due (now >= next_step) and not held back by a busy datapath: tick()
  // decides those two cases itself.
  // After the main thread issued in this tick: its next instructions that read and write
  // nothing but its registers, descriptors and pc (integer ALU, compares, branches, descriptor
  // updates) are executed now at the cycles they issue in, while those are before r.horizon.
  // Nothing else reads that state before then, and the core ticks again at the cycle the next
  // instruction issues in, so every result and statistic is the same as issuing them a tick
  // each (CliRunAhead tests).
  void run_ahead(CycleResources& r);
  Step step(VectorOp& op, sim::Cycle now, CycleResources& r, Stall* why);
  // After the step in this tick of the core's only live operation, while nothing else can
  // use the core before `until` (at most r.horizon: the main thread waits for a microthread,
  // a synchronous operation or its next instruction's cycle): the operation's next steps that
  // neither pop, send nor finish, and take no wavelet but the one in front of its input now,
  // are taken now, each at its own cycle before `until` with that cycle's ports, their stalls
  // counted; op.next_step becomes the first cycle not taken. Nothing reads the operation or its
  // counters in between but a tick of this core, which finds it not due, so every result and
  // statistic is the same as stepping it a tick each (CliRunAhead tests). Called only for an
  // operation with such steps (may_run_ahead).
  void run_ahead_vector(VectorOp& op, CycleResources& r, sim::Cycle until);
  // Whether some step of op could be taken ahead: none can when it sends, or pops a wavelet at
  // every step.
  static bool may_run_ahead(const VectorOp& op) { return !op.fab_out && (op.in_slot < 0 || op.repeat > 1); }
  // The port accesses of op's next step; `plain_step`: op is plain and the step does not wrap
  // (issue_plain's fallback), so each operand's words are a range.
  void plan(VectorOp& op, std::uint32_t index_override, bool plain_step);
  // A plain operand's port words this step, w0 to w1 in either direction; a source's first
  // dropped when it was the last word of its previous step (w1 is recorded as the new last).
  // False when no word is left.
  inline bool plain_words(VectorOp& op, int slot, std::uint32_t count, std::uint32_t& w0, std::uint32_t& w1);
  // The port accesses of a plain operation's next step (VectorOp::plain), issued as plan()
  // would list them. False when one could not be (*why says why): the step is then planned
  // and open with the accesses issued so far done, as step() leaves it after such a stall.
  inline bool issue_plain(VectorOp& op, std::uint32_t count, CycleResources& r, Stall* why);
  // `count` elements of op from index `first`, its linear operands' first at `from` (op.at and
  // op.next for the step's; consecutive steps may go in one call, as for fmac_linear()).
  void compute(VectorOp& op, const std::int64_t* from, std::uint32_t first, std::uint32_t count,
               std::uint32_t sparse_index, std::uint32_t in_payload, sim::Cycle now);
  // compute() of an FMAC whose operands are linear memory descriptors or scalars (the common
  // case), in one loop over `count` elements, its linear operands' first at `from` (op.at for
  // the step's; the steps' elements are in order, so consecutive steps may go in one call).
  void fmac_linear(const VectorOp& op, const std::int64_t* from, std::uint32_t count, std::uint32_t payload);
  // fmac_linear() of a VectorOp::fmac_f16 operation, its operands in SRAM pages read without a
  // call per element (fmac_linear() itself otherwise).
  void fmac_f16(const VectorOp& op, const std::int64_t* from, std::uint32_t count, std::uint32_t payload);
  // Moves the running addresses (VectorOp::at) past the `count` elements op.next just took.
  static inline void advance_addresses(VectorOp& op, std::uint32_t count);
  // A step of `count` elements taken (`pops`: it ended its wavelet): op's progress and
  // addresses, and the core's element counters (`info`: *op.info).
  inline void took_step(VectorOp& op, const isa::OpInfo& info, std::uint32_t count, bool pops);
  // For run_ahead_vector, of a shifting op's step of per_step elements about to issue: whether
  // each source skips the word its last step read exactly as the steps after this one will,
  // so that their accesses are this step's shifted.
  [[nodiscard]] bool skips_steadily(const VectorOp& op, std::uint32_t count) const;
  // Takes `n` more steps of `count` elements that each repeat the step just taken, which made
  // `reads` and `writes` port accesses; none wraps, pops or is the op's last.
  inline void repeat_step(VectorOp& op, const isa::OpInfo& info, std::uint32_t count, std::uint32_t n,
                          std::uint64_t reads, std::uint64_t writes);
  // Whether a circular operand wraps within the step of `count` elements from op.next.
  static bool step_wraps(const VectorOp& op, std::uint32_t count);
  // compute() in timing-only mode: the counters and wavelets of `count` elements, no values.
  void count_traffic(const VectorOp& op, std::uint32_t count, sim::Cycle now);
  void retire(VectorOp& op, sim::Cycle now);
  // Whether every live operation holding one of the colors `in` (read) or `out` (written) is
  // on the ordered microthread `ins` names, which then may issue behind them.
  [[nodiscard]] bool behind_own_holders(const isa::Instruction& ins, std::uint64_t in, std::uint64_t out) const;
  void recompute_held_colors();
  // Ordered microthreads: `op` has taken its last step (or, with no elements, is released)
  // in cycle `at`; its successor on the microthread, waiting for that, may step from the
  // cycle the forwarding rule gives (docs/isa.md, "Ordered microthreads").
  void release_successor(const VectorOp& op);
  // At issue: an operation of an ordered microthread waits for its predecessor's last step,
  // or, when that was taken already, starts no earlier than first_dependent_step() of it.
  void order_after_predecessor(VectorOp& op);
  // Moves the released operations of parked_ into live_ by age (keeping the datapath-stall
  // run's positions), each wanting the cycle its tick visit would have wanted.
  template <class Want>
  void admit_released(sim::Cycle next_cycle, Want&& want);
  // The newest live operation of microthread `ut` (null: none).
  [[nodiscard]] const VectorOp* newest_on(std::uint8_t ut) const;
  // The oldest live operation of `pred`'s microthread younger than `pred` (null: none).
  [[nodiscard]] VectorOp* next_on(const VectorOp& pred);
  [[nodiscard]] sim::Cycle first_dependent_step(const VectorOp& pred) const;
  // Observer calls, kept out of line and cold so that the hot paths lay out as without hooks.
  [[gnu::cold, gnu::noinline]] void report_vector_op(const VectorOp& op) const;
  [[gnu::cold, gnu::noinline]] void report_task(const isa::Program& prog, sim::Cycle end) const;
  [[nodiscard]] std::uint32_t element_address(const VectorOp& op, int slot, std::uint32_t i) const;
  [[nodiscard]] std::uint32_t queue_mask_in(const isa::Instruction& ins) const;
  // helpers
  [[noreturn]] void fault(const std::string& what, std::uint32_t pc) const;
  [[nodiscard]] std::uint32_t checked_address(std::int64_t addr, unsigned bytes, std::uint32_t pc) const {
    if (addr < 0 || static_cast<std::uint64_t>(addr) + bytes > sram_.capacity() || (addr & (bytes - 1)))
      address_fault(addr, bytes, pc);
    return static_cast<std::uint32_t>(addr);
  }
  [[noreturn]] void address_fault(std::int64_t addr, unsigned bytes, std::uint32_t pc) const;
  void count_stall(Stall s, std::uint8_t* sleep_counts);

  PeCoord coord_;
  std::uint64_t started_ = 0;  // bit t: task t has started since the program was loaded
  const CoreParams* p_;
  Sram sram_;
  std::shared_ptr<const isa::Program> program_;
  RampPort* ramp_ = nullptr;
  std::uint32_t regs_[isa::kRegisters] = {};
  std::vector<isa::Descriptor> dsd_;
  std::uint64_t active_ = 0;                  // local tasks activated
  std::uint64_t local_tasks_ = 0;             // bit t: the program's task t is local
  std::uint64_t data_colors_ = 0;             // bit c: a data task of the program is bound to color c
  std::uint64_t blocked_ = 0;                 // tasks blocked
  std::uint64_t maybe_in_ = 0;                // colors that may hold wavelets
  std::uint64_t data_front_ = 0;              // colors whose front wavelet is known to be data
  std::uint64_t held_in_ = 0, held_out_ = 0;  // colors held by vector operations
  int running_ = -1;
  std::uint32_t pc_ = 0;
  sim::Cycle ready_at_{0};
  sim::Cycle task_start_{0};      // the running task's start (for traces)
  int main_stall_ = -1;           // cause of the main thread's last stall (for reports)
  std::vector<VectorOp> ops_;     // [0] the synchronous slot, [1..] the microthreads
  std::uint64_t live_slots_ = 0;  // bit i: ops_[i] is live (in flight)
  SlotList live_;                 // slots of the live operations that may step, oldest first
  // Slots of the live operations waiting for their predecessor's last step (after_pred), in
  // issue order: not visited by tick(). release_successor() clears after_pred and sets
  // released_; the end of that tick moves them into live_ at their place by age.
  SlotList parked_;
  bool released_ = false;
  // Positions [fpu_run_begin_, fpu_run_end_) in live_ of operations that all stalled on the
  // busy datapath in the last tick (kNoRun: none); moved as operations retire before them (an
  // issued operation goes after them).
  static constexpr std::size_t kNoRun = ~std::size_t{0};
  std::size_t fpu_run_begin_ = kNoRun, fpu_run_end_ = 0;
  sim::Cycle earliest_done_ = sim::Cycle::never();  // the earliest done_at of a live operation
  std::uint32_t seq_ = 0;
  sim::Cycle iter_busy_until_{0};
  std::vector<std::pair<sim::Cycle, std::uint8_t>> host_activations_;
  std::vector<std::pair<sim::Cycle, std::uint8_t>> arrivals_;  // (visible from, color), not yet in maybe_in_
  sim::Cycle credit_at_{0};  // the latest cycle from which a credit that did not wake the core is usable
  sim::Cycle slept_from_ = sim::Cycle::never();
  bool sleep_busy_ = false;
  std::uint8_t sleep_stalls_[kStallCauses] = {};
  CoreCounters c_;
  std::uint32_t sram_in_use_ = 0;
  CoreObserver* observer_ = nullptr;
};

}  // namespace wafersim::hw

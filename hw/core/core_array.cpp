#include "hw/core/core_array.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <stdexcept>

#include "sim/config/diagnostics.h"
#include "sim/errors.h"

namespace wafersim::hw {
using sim::Cycle;

CoreArray::CoreArray(std::string name, const WaferConfig& wafer, CoreArrayOptions options)
    : name_(std::move(name)),
      width_(wafer.width),
      height_(wafer.height),
      params_(wafer.pe, options.colors),
      options_(options),
      cores_(static_cast<std::size_t>(wafer.pe_count())),
      awake_(static_cast<std::uint32_t>(wafer.pe_count())),
      ticking_(static_cast<std::uint32_t>(wafer.pe_count())),
      scratch_(params_.banks) {
  params_.timing_only = options.timing_only;
}

CoreArray::~CoreArray() {
  if (bands_ && !band_ticks_.empty()) bands_->remove_client(this);
}

void CoreArray::connect(std::function<RampPort*(PeCoord)> ramp_of) {
  ramp_of_ = std::move(ramp_of);
  for (std::size_t i = 0; i < cores_.size(); ++i)
    if (cores_[i]) cores_[i]->attach(ramp_of_(cores_[i]->coord()));
}

Core& CoreArray::core(PeCoord pe) {
  if (!contains(pe))
    throw sim::InputError(fmt::format("PE ({}, {}) is outside the {} x {} grid", pe.x, pe.y, width_, height_));
  auto& slot = cores_[index(pe)];
  if (!slot) {
    slot = std::make_unique<Core>(pe, params_);
    if (ramp_of_) slot->attach(ramp_of_(pe));
    for (const auto& [idx, o] : observers_)
      if (idx == index(pe)) slot->set_observer(o);
    ++created_;
  }
  return *slot;
}

void CoreArray::observe(PeCoord pe, CoreObserver* observer) {
#ifdef WAFERSIM_NO_TRACE_HOOKS
  (void)pe;
  (void)observer;
  throw std::logic_error("this build has no tracing hooks (configured with WAFERSIM_TRACE_HOOKS=OFF)");
#else
  if (!contains(pe)) throw std::logic_error("CoreArray::observe: PE outside the grid");
  observers_.emplace_back(index(pe), observer);
  if (cores_[index(pe)]) cores_[index(pe)]->set_observer(observer);
#endif
}

const Core* CoreArray::find(PeCoord pe) const { return contains(pe) ? cores_[index(pe)].get() : nullptr; }

Cycle CoreArray::earliest_cycle() const {
  if (!engine_) return last_tick_ == Cycle(0) ? Cycle(0) : last_tick_ + Cycle(1);
  return engine_->now();
}

void CoreArray::wake(std::uint32_t idx, Cycle at) {
  if (schedule(idx, at) && engine_) engine_->wake(this, at);
}

bool CoreArray::schedule(std::uint32_t idx, Cycle at) {
  // A core in an awake set is ticked in the array's next evaluation, which is at cycle
  // last_tick_ + 1 when cores sleep (own_next_ asks for it): a wake for that cycle or earlier
  // adds nothing.
  auto into = [&](const sim::IndexSet& awake, sim::WakeCalendar& timed) {
    if (options_.sleep && awake.contains(idx) && at <= last_tick_ + Cycle(1)) return false;
    timed.schedule(idx, at.count());
    return true;
  };
  if (band_ticks_.empty()) return into(awake_, timed_);
  BandTicks& s = band_of_core(idx);
  return into(s.awake, s.timed);
}

void CoreArray::load(const isa::Placement& p) {
  if (p.x1 >= width_ || p.y1 >= height_)
    throw sim::config::ConfigError(
        sim::config::Diagnostic{p.location, "",
                                fmt::format("PEs x {}..{}, y {}..{} reach beyond the {} x {} grid of this platform",
                                            p.x0, p.x1, p.y0, p.y1, width_, height_)});
  for (std::uint32_t y = p.y0; y <= p.y1; ++y)
    for (std::uint32_t x = p.x0; x <= p.x1; ++x)
      load(PeCoord{static_cast<std::uint16_t>(x), static_cast<std::uint16_t>(y)}, p.program);
}

void CoreArray::load(PeCoord pe, std::shared_ptr<const isa::Program> program) {
  Core& c = core(pe);
  const Cycle at = earliest_cycle();
  c.load(std::move(program), at);
  loaded_.insert(std::lower_bound(loaded_.begin(), loaded_.end(), index(pe)), index(pe));
  wake(index(pe), at);
}

void CoreArray::replace(PeCoord pe, std::shared_ptr<const isa::Program> program) {
  Core& c = core(pe);
  if (!c.loaded()) return load(pe, std::move(program));
  const Cycle at = earliest_cycle();
  c.load(std::move(program), at, true);
  wake(index(pe), at);
}

std::uint64_t CoreArray::busy_count() const {
  std::uint64_t n = 0;
  for (std::uint32_t idx : loaded_) n += cores_[idx]->busy();
  return n;
}

void CoreArray::activate(PeCoord pe, std::uint8_t task, Cycle at) {
  at = std::max(at, earliest_cycle());
  core(pe).host_activate(task, at);
  wake(index(pe), at);
}

void CoreArray::set_bands(sim::parallel::RowBands* bands) {
  if (bands && bands->rows() != height_) throw std::logic_error("CoreArray::set_bands: another row count");
  // What is scheduled so far, to be dealt out again.
  std::vector<std::pair<std::uint32_t, std::uint64_t>> timed;
  std::vector<std::uint32_t> awake;
  take_all(awake, timed);
  if (bands_ && !band_ticks_.empty()) bands_->remove_client(this);
  bands_ = bands;
  band_ticks_.clear();
  if (bands_ && bands_->parallel()) {
    band_ticks_.reserve(bands_->count());
    for (std::uint32_t b = 0; b < bands_->count(); ++b) {
      band_ticks_.emplace_back(params_.banks, static_cast<std::uint32_t>(cores_.size()));
      band_ticks_.back().scratch.horizon = scratch_.horizon;
    }
    bands_->add_client(this);
  }
  deal_out(awake, timed);
}

void CoreArray::take_all(std::vector<std::uint32_t>& awake,
                         std::vector<std::pair<std::uint32_t, std::uint64_t>>& timed) {
  auto take = [&](sim::IndexSet& a, sim::WakeCalendar& t) {
    a.drain([&awake](std::uint32_t idx) { awake.push_back(idx); });
    t.drain_all([&timed](std::uint32_t idx, std::uint64_t at) { timed.emplace_back(idx, at); });
  };
  take(awake_, timed_);
  for (BandTicks& b : band_ticks_) take(b.awake, b.timed);
}

void CoreArray::deal_out(const std::vector<std::uint32_t>& awake,
                         const std::vector<std::pair<std::uint32_t, std::uint64_t>>& timed) {
  for (const std::uint32_t idx : awake) (band_ticks_.empty() ? awake_ : band_of_core(idx).awake).insert(idx);
  for (const auto& [idx, at] : timed) (band_ticks_.empty() ? timed_ : band_of_core(idx).timed).schedule(idx, at);
}

void CoreArray::repartitioned(const std::vector<std::uint32_t>& /*old_first*/) {
  std::vector<std::pair<std::uint32_t, std::uint64_t>> timed;
  std::vector<std::uint32_t> awake;
  take_all(awake, timed);
  deal_out(awake, timed);
}

void CoreArray::set_run_ahead(Cycle horizon) {
  scratch_.horizon = horizon;
  for (BandTicks& b : band_ticks_) b.scratch.horizon = horizon;
}

void CoreArray::evaluate(Cycle now) {
  if (error_) return;
  last_tick_ = now;
  own_next_ = Cycle::never();
  if (!band_ticks_.empty()) return tick_bands(now);
  timed_.take(now.count(), [this](std::uint32_t idx) { awake_.insert(idx); });
  ticking_.swap(awake_);
  tick_serial(now);
}

void CoreArray::fail(std::exception_ptr failure) {
  if (!engine_) std::rethrow_exception(failure);
  sc_core::sc_stop();
}

void CoreArray::tick_serial(Cycle now) {
  const Cycle next_cycle = now + Cycle(1);
  std::exception_ptr failure;
  core_ticks_ += ticking_.drain_ahead(
      order_, [this](std::uint32_t idx) { cores_[idx]->prefetch_object(); },
      [this](std::uint32_t idx) { cores_[idx]->prefetch_state(); },
      [&](std::uint32_t idx) {
        if (failure) return;
        Core& c = *cores_[idx];
        Cycle next;
        try {
          next = c.tick(now, scratch_);
        } catch (const sim::Error& e) {
          error_ = e.what();
          failure = std::current_exception();
          return;
        }
        if (stays_awake(c, next, next_cycle)) {
          own_next_ = std::min(own_next_, next);
          awake_.insert(idx);
        } else if (!next.is_never()) {
          timed_.schedule(idx, next.count());
        }
      });
  if (failure) fail(failure);
}

void CoreArray::tick_bands(Cycle now) {
  // The cores due (an estimate: a core may be due twice), and in how many bands.
  std::uint64_t due = 0;
  std::uint32_t with = 0;
  for (const BandTicks& s : band_ticks_) {
    const std::uint64_t n = s.awake.inserts() + s.timed.due_soon(now.count());
    due += n;
    with += n != 0;
  }
  const bool job = due >= kBandsFrom && with > 1 && observers_.empty();
  if (job) {
    bands_->run([this, now](std::size_t b) { tick_band(b, now); });
    ++band_jobs_;
  } else {
    for (std::size_t b = 0; b < band_ticks_.size(); ++b) {
      tick_band(b, now);
      if (band_ticks_[b].failure) break;  // one thread stops at the first core that fails
    }
  }
  std::exception_ptr failure;
  for (std::uint32_t b = 0; b < band_ticks_.size(); ++b) {
    BandTicks& s = band_ticks_[b];
    core_ticks_ += s.ticks;
    if (job) bands_->add_work(b, s.ticks * sim::parallel::kCoreTickUnits);
    s.ticks = 0;
    own_next_ = std::min(own_next_, s.own_next);
    s.own_next = Cycle::never();
    if (s.failure && !failure) {
      failure = s.failure;
      error_ = s.error;
    }
    s.failure = nullptr;
  }
  if (failure) fail(failure);
}

void CoreArray::tick_band(std::size_t b, Cycle now) {
  BandTicks& s = band_ticks_[b];
  s.timed.take(now.count(), [&s](std::uint32_t idx) { s.awake.insert(idx); });
  s.order.clear();
  s.awake.drain([&s](std::uint32_t idx) { s.order.push_back(idx); });
  const std::size_t n = s.order.size();
  const std::uint32_t* idx = s.order.data();
  const Cycle next_cycle = now + Cycle(1);
  constexpr std::size_t kFar = sim::IndexSet::kFar, kNear = sim::IndexSet::kNear;
  for (std::size_t i = 0; i < n && i < kFar; ++i) cores_[idx[i]]->prefetch_object();
  for (std::size_t i = 0; i < n && i < kNear; ++i) cores_[idx[i]]->prefetch_state();
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kFar < n) cores_[idx[i + kFar]]->prefetch_object();
    if (i + kNear < n) cores_[idx[i + kNear]]->prefetch_state();
    Core& c = *cores_[idx[i]];
    Cycle next;
    ++s.ticks;
    try {
      next = c.tick(now, s.scratch);
    } catch (const sim::Error& e) {
      s.error = e.what();
      s.failure = std::current_exception();
      return;
    }
    if (stays_awake(c, next, next_cycle)) {
      s.own_next = std::min(s.own_next, next);
      s.awake.insert(idx[i]);
    } else if (!next.is_never()) {
      s.timed.schedule(idx[i], next.count());
    }
  }
}

Cycle CoreArray::write(Cycle /*now*/) {
  if (error_) return Cycle::never();
  return next_wake();
}

Cycle CoreArray::next_wake() const {
  // Cores kept awake only because sleeping is off may have nothing of their own to do (they
  // wait for a wavelet or a credit): they do not keep the simulation going by themselves.
  Cycle next = own_next_;
  if (!timed_.empty()) next = std::min(next, Cycle(timed_.earliest()));
  for (const BandTicks& s : band_ticks_)
    if (!s.timed.empty()) next = std::min(next, Cycle(s.timed.earliest()));
  return next;
}

std::string CoreArray::describe() const {
  std::uint32_t awake = awake_.size();
  for (const BandTicks& s : band_ticks_) awake += s.awake.size();
  return fmt::format("{}: {} cores loaded, {} awake", name_, loaded_.size(), awake);
}

void CoreArray::on_arrival(PeCoord pe, Color c, Cycle at) {
  if (arrived_in_band(pe, c, at)) wake_after_band(pe, at);
}

bool CoreArray::arrived_in_band(PeCoord pe, Color c, Cycle at) {
  if (!contains(pe)) return false;
  Core* core = cores_[index(pe)].get();
  if (!core || !core->loaded()) return false;
  core->arrived(c, at);
  return core->arrival_matters(c) && schedule(index(pe), at);
}

void CoreArray::on_credit(PeCoord pe, Color c, Cycle at) {
  if (credited_in_band(pe, c, at)) wake_after_band(pe, at);
}

bool CoreArray::credited_in_band(PeCoord pe, Color /*c*/, Cycle at) {
  if (!contains(pe)) return false;
  Core* core = cores_[index(pe)].get();
  if (!core || !core->loaded()) return false;
  return core->credited(at) && schedule(index(pe), at);
}

void CoreArray::wake_after_band(PeCoord /*pe*/, Cycle at) {
  if (engine_) engine_->wake(this, at);
}

void CoreArray::check() const {
  if (error_) throw sim::SimulationError(*error_);
}

void CoreArray::check_finished() const {
  check();
  std::vector<std::string> stuck;
  for (std::uint32_t idx : loaded_)
    if (cores_[idx]->busy()) stuck.push_back(cores_[idx]->describe_state());
  if (stuck.empty()) return;
  std::string msg =
      fmt::format("the simulation ran out of events while {} PE(s) still had work (deadlock):", stuck.size());
  for (std::size_t i = 0; i < stuck.size() && i < 16; ++i) msg += "\n  " + stuck[i];
  if (stuck.size() > 16) msg += fmt::format("\n  ... and {} more", stuck.size() - 16);
  throw sim::SimulationError(msg);
}

std::uint64_t CoreArray::finish_cycle() const { return totals().finish_cycle; }

std::uint64_t CoreArray::sram_allocated_bytes() const {
  std::uint64_t s = 0;
  for (const auto& c : cores_)
    if (c) s += c->sram().allocated_bytes();
  return s;
}

const CoreCounters& CoreArray::totals() const {
  const TotalsKey at{core_ticks_, loaded_.size(), earliest_cycle()};
  if (at == totals_at_) return totals_;
  static_assert(sizeof(CoreCounters) == (13 + kStallCauses + kLaneKinds) * sizeof(std::uint64_t),
                "CoreArray::totals() sums every counter: add the new one there");
  CoreCounters t;
  for (std::uint32_t idx : loaded_) {
    const CoreCounters c = accounted(idx);
    t.busy_cycles += c.busy_cycles;
    t.instructions += c.instructions;
    t.vector_ops += c.vector_ops;
    t.vector_elements += c.vector_elements;
    t.flops += c.flops;
    t.task_activations += c.task_activations;
    t.wavelets_in += c.wavelets_in;
    t.wavelets_out += c.wavelets_out;
    t.sram_reads += c.sram_reads;
    t.sram_writes += c.sram_writes;
    t.sram_bytes_read += c.sram_bytes_read;
    t.sram_bytes_written += c.sram_bytes_written;
    t.finish_cycle = std::max(t.finish_cycle, c.finish_cycle);
    for (int s = 0; s < kStallCauses; ++s) t.stall[s] += c.stall[s];
    for (int k = 0; k < kLaneKinds; ++k) t.lane_ops[k] += c.lane_ops[k];
  }
  totals_ = t;
  totals_at_ = at;
  return totals_;
}

void CoreArray::add_stats(sim::stats::Group& g) {
  auto& cores = g.group("cores");
  cores.formula(
      "pes_loaded", [this] { return static_cast<double>(loaded_.size()); }, "PEs", "PEs with a program", true);
  cores.formula(
      "finish_cycle", [this] { return static_cast<double>(finish_cycle()); }, "cycles",
      "one past the last cycle in which any PE was busy", true);
  struct Field {
    const char* name;
    std::uint64_t CoreCounters::*field;
    const char* unit;
    const char* description;
  };
  static const Field kFields[] = {
      {"busy_cycles", &CoreCounters::busy_cycles, "cycles",
       "cycles with a task running or a vector operation in flight, summed over PEs"},
      {"instructions", &CoreCounters::instructions, "instructions", "instructions issued"},
      {"vector_ops", &CoreCounters::vector_ops, "instructions", "vector instructions completed"},
      {"vector_elements", &CoreCounters::vector_elements, "elements", "elements processed by vector instructions"},
      {"flops", &CoreCounters::flops, "FLOP", "floating-point operations (an FMAC counts 2)"},
      {"task_activations", &CoreCounters::task_activations, "tasks", "tasks started"},
      {"wavelets_in", &CoreCounters::wavelets_in, "wavelets", "wavelets taken from the ramp"},
      {"wavelets_out", &CoreCounters::wavelets_out, "wavelets", "wavelets sent into the ramp"},
      {"sram_reads", &CoreCounters::sram_reads, "accesses", "SRAM read port accesses (one port word each)"},
      {"sram_writes", &CoreCounters::sram_writes, "accesses", "SRAM write port accesses (one port word each)"},
      {"sram_bytes_read", &CoreCounters::sram_bytes_read, "B", "element bytes read from SRAM by instructions"},
      {"sram_bytes_written", &CoreCounters::sram_bytes_written, "B", "element bytes written to SRAM by instructions"},
  };
  for (const auto& f : kFields) {
    auto field = f.field;
    cores.formula(
        f.name, [this, field] { return static_cast<double>(total(field)); }, f.unit, f.description, true);
  }
  auto& stall = cores.group("stall");
  for (int s = 0; s < kStallCauses; ++s) {
    const auto st = static_cast<Stall>(s);
    stall.formula(
        std::string(stall_name(st)), [this, st] { return static_cast<double>(total_stall(st)); }, "cycles",
        std::string(stall_description(st)), true);
  }
  auto& lanes = cores.group("lane_ops");
  for (int k = 0; k < kLaneClasses; ++k)
    lanes.vector(
        std::string(lane_class_name(k)), [] { return std::size_t{kLaneTypes}; },
        [this, k](std::size_t t) { return static_cast<double>(totals().lane_ops[k * kLaneTypes + t]); }, "lanes",
        fmt::format("lane operations through the {} datapath (vector elements and scalar instructions), per element "
                    "type (f16, bf16, f32, u16, u32)",
                    lane_class_name(k)));
  if (cores_.size() <= kPerPeStatsLimit) {
    auto& per = cores.group("per_pe");
    auto size = [this] { return cores_.size(); };
    auto value = [this](std::size_t i, std::uint64_t CoreCounters::*field) {
      return cores_[i] ? static_cast<double>(accounted(static_cast<std::uint32_t>(i)).*field) : 0.0;
    };
    per.vector(
        "busy_cycles", size, [value](std::size_t i) { return value(i, &CoreCounters::busy_cycles); }, "cycles",
        "busy cycles of each PE (index y * width + x)");
    per.vector(
        "finish_cycle", size, [value](std::size_t i) { return value(i, &CoreCounters::finish_cycle); }, "cycles",
        "one past the last busy cycle of each PE (index y * width + x)");
    per.vector(
        "flops", size, [value](std::size_t i) { return value(i, &CoreCounters::flops); }, "FLOP",
        "floating-point operations of each PE (index y * width + x)");
    per.vector(
        "stall_cycles", size,
        [this](std::size_t i) {
          return cores_[i] ? static_cast<double>(accounted(static_cast<std::uint32_t>(i)).stall_total()) : 0.0;
        },
        "cycles", "stalled thread-cycles of each PE, all causes (index y * width + x)");
  }
}

}  // namespace wafersim::hw

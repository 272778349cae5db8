#include "sim/engine/engine.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace wafersim::sim {

Engine::Engine(const sc_core::sc_module_name& name, EngineOptions options)
    : sc_core::sc_module(name), options_(options), period_ps_(1e12 / options.clock.hz) {
  SC_HAS_PROCESS(Engine);
  SC_METHOD(tick);
  sensitive << tick_event_;
  dont_initialize();
}

void Engine::add(Clocked* component) {
  components_.push_back(component);
  awake_flag_.push_back(0);
}

std::uint32_t Engine::id_of(Clocked* c) const {
  // Components are few (coarse objects such as a whole mesh); a linear search is fine.
  for (std::uint32_t i = 0; i < components_.size(); ++i)
    if (components_[i] == c) return i;
  throw std::logic_error("Engine::wake on a component that was never added");
}

sc_core::sc_time Engine::time_of(Cycle c) const {
  return sc_core::sc_time(std::round(static_cast<double>(c.count()) * period_ps_), sc_core::SC_PS);
}

Cycle Engine::last_cycle() const {
  const double exact_ps = 9007199254740992.0;  // 2^53
  return Cycle(static_cast<std::uint64_t>(std::floor(exact_ps / period_ps_)));
}

Cycle Engine::first_cycle_at_or_after(const sc_core::sc_time& t) const {
  double ps = t.to_seconds() * 1e12;
  auto c = static_cast<std::uint64_t>(std::ceil(ps / period_ps_ - 1e-9));
  while (c > 0 && time_of(Cycle(c - 1)) >= t) --c;
  while (time_of(Cycle(c)) < t) ++c;
  return Cycle(c);
}

void Engine::wake(Clocked* component, Cycle at) {
  const std::uint32_t id = id_of(component);
  // The earliest cycle that can still run: the next one inside a tick, else the current one.
  Cycle earliest = in_tick_ ? current_ + Cycle(1) : current_;
  if (!in_tick_ && sc_core::sc_is_running())
    earliest = std::max(earliest, first_cycle_at_or_after(sc_core::sc_time_stamp()));
  if (at < earliest) at = earliest;
  if (at == earliest && in_tick_) {
    if (!awake_flag_[id]) {
      awake_flag_[id] = 1;
      awake_.push_back(id);
    }
  } else {
    timed_.push(Wake{at.count(), id});
  }
  if (!in_tick_) schedule_next();
}

void Engine::wake_at_time(Clocked* component, const sc_core::sc_time& t) {
  wake(component, first_cycle_at_or_after(t));
}

bool Engine::quiescent() const { return awake_.empty() && timed_.empty(); }

void Engine::end_of_elaboration() { schedule_next(); }

void Engine::schedule_next() {
  Cycle next = Cycle::never();
  if (!awake_.empty()) next = in_tick_ ? current_ + Cycle(1) : current_;
  if (!timed_.empty()) next = std::min(next, Cycle(timed_.top().cycle));
  if (!options_.idle_skip && cycles_ > Cycle(0) && !quiescent()) next = std::min(next, cycles_);
  if (next.is_never()) return;
  if (!options_.max_cycles.is_never() && next >= options_.max_cycles) {
    limit_reached_ = true;
    return;
  }
  if (next == scheduled_) return;
  sc_core::sc_time now = sc_core::sc_is_running() ? sc_core::sc_time_stamp() : sc_core::SC_ZERO_TIME;
  sc_core::sc_time when = time_of(next);
  if (when < now) when = now;
  if (scheduled_ != Cycle::never() && scheduled_ < next) return;  // an earlier tick is armed already
  tick_event_.cancel();
  tick_event_.notify(when - now);
  scheduled_ = next;
}

void Engine::tick() {
  scheduled_ = Cycle::never();
  const sc_core::sc_time now_time = sc_core::sc_time_stamp();
  Cycle now = first_cycle_at_or_after(now_time);
  if (now < current_) now = current_;
  // Move timed wake-ups that are due into the awake set.
  while (!timed_.empty() && timed_.top().cycle <= now.count()) {
    std::uint32_t id = timed_.top().id;
    timed_.pop();
    if (!awake_flag_[id]) {
      awake_flag_[id] = 1;
      awake_.push_back(id);
    }
  }
  if (cycles_ > Cycle(0) && now > cycles_) cycles_skipped_ += (now - cycles_).count();
  current_ = now;
  in_tick_ = true;
  ++engine_ticks_;

  try {
    tick_components(now);
  } catch (...) {
    failure_ = std::current_exception();
    in_tick_ = false;
    sc_core::sc_stop();
    return;
  }
  component_ticks_ += ticking_.size();
  cycles_ = now + Cycle(1);
  schedule_next();
  in_tick_ = false;
  current_ = now + Cycle(1);
}

void Engine::tick_components(Cycle now) {
  ticking_.clear();
  if (options_.idle_skip) {
    ticking_.swap(awake_);
    std::sort(ticking_.begin(), ticking_.end());  // registration order, independent of wake order
  } else {
    awake_.clear();
    for (std::uint32_t i = 0; i < components_.size(); ++i) ticking_.push_back(i);
  }
  for (std::uint32_t id : ticking_) awake_flag_[id] = 0;

  for (std::uint32_t id : ticking_) components_[id]->read(now);
  for (std::uint32_t id : ticking_) components_[id]->evaluate(now);
  for (std::uint32_t id : ticking_) {
    Cycle next = components_[id]->write(now);
    if (next.is_never()) continue;
    if (next <= now + Cycle(1)) {
      if (!awake_flag_[id]) {
        awake_flag_[id] = 1;
        awake_.push_back(id);
      }
    } else {
      timed_.push(Wake{next.count(), id});
    }
  }
}

}  // namespace wafersim::sim

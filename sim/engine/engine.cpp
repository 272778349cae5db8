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
  timed_of_.push_back(0);
}

void Engine::add_observer(TickObserver* observer) {
#ifdef WAFERSIM_NO_TRACE_HOOKS
  (void)observer;
  throw std::logic_error("this build has no tracing hooks (configured with WAFERSIM_TRACE_HOOKS=OFF)");
#else
  observers_.push_back(observer);
#endif
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
  if (!in_tick_ && !options_.driven && sc_core::sc_is_running())
    earliest = std::max(earliest, first_cycle_at_or_after(sc_core::sc_time_stamp()));
  if (at < earliest) at = earliest;
  if (at == earliest && in_tick_) {
    if (!awake_flag_[id]) {
      awake_flag_[id] = 1;
      awake_.push_back(id);
    }
  } else {
    timed_.push(Wake{at.count(), id});
    ++timed_of_[id];
  }
  if (!in_tick_) schedule_next();
}

void Engine::wake_at_time(Clocked* component, const sc_core::sc_time& t) {
  wake(component, first_cycle_at_or_after(t));
}

bool Engine::quiescent() const { return awake_.empty() && timed_.empty(); }

bool Engine::quiescent_except(const Clocked* component) const {
  for (std::uint32_t i = 0; i < components_.size(); ++i)
    if (components_[i] != component && (awake_flag_[i] || timed_of_[i] > 0)) return false;
  return true;
}

Cycle Engine::next_due() const {
  Cycle next = Cycle::never();
  if (!awake_.empty()) next = current_;
  if (!timed_.empty()) next = std::min(next, std::max(current_, Cycle(timed_.top().cycle)));
  if (!options_.idle_skip && cycles_ > Cycle(0) && !quiescent()) next = std::min(next, std::max(current_, cycles_));
  return next;
}

bool Engine::step(Cycle end) {
  if (!options_.driven) throw std::logic_error("Engine::step on an engine that SystemC ticks");
  const Cycle next = next_due();
  if (next.is_never() || next >= end) return false;
  if (!options_.max_cycles.is_never() && next >= options_.max_cycles) {
    limit_reached_ = true;
    return false;
  }
  tick_at(next);
  return true;
}

void Engine::end_of_elaboration() { schedule_next(); }

void Engine::schedule_next() {
  if (options_.driven) return;
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
  const sc_core::sc_time at = time_of(next);
  const sc_core::sc_time when = at < now ? now : at;
  if (scheduled_ != Cycle::never() && scheduled_ < next) return;  // an earlier tick is armed already
  tick_event_.cancel();
  tick_event_.notify(when - now);
  scheduled_ = next;
  scheduled_time_ = at;
}

void Engine::tick() {
  const Cycle armed = scheduled_;
  scheduled_ = Cycle::never();
  // The cycle the event was armed for when it fires at that cycle's time (not when it was
  // armed for a time already past).
  const sc_core::sc_time& stamp = sc_core::sc_time_stamp();
  Cycle now = !armed.is_never() && stamp == scheduled_time_ ? armed : first_cycle_at_or_after(stamp);
  if (now < current_) now = current_;
  try {
    tick_at(now);
  } catch (...) {
    failure_ = std::current_exception();
    in_tick_ = false;
    sc_core::sc_stop();
    return;
  }
  schedule_next();
}

void Engine::tick_at(Cycle now) {
  // Move timed wake-ups that are due into the awake set.
  while (!timed_.empty() && timed_.top().cycle <= now.count()) {
    std::uint32_t id = timed_.top().id;
    timed_.pop();
    --timed_of_[id];
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
    in_tick_ = false;
    throw;
  }
  component_ticks_ += ticking_.size();
  cycles_ = now + Cycle(1);
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

#ifndef WAFERSIM_NO_TRACE_HOOKS
  if (!observers_.empty())
    for (TickObserver* o : observers_) o->before_tick(now);
#endif
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
      ++timed_of_[id];
    }
  }
#ifndef WAFERSIM_NO_TRACE_HOOKS
  if (!observers_.empty())
    for (TickObserver* o : observers_) o->after_tick(now);
#endif
}

}  // namespace wafersim::sim

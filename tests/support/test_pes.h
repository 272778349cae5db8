#pragma once
// Scripted PEs on the ramps of a mesh, for fabric tests: they send wavelets through the
// hw::RampPort contract as soon as a credit allows, and record every wavelet they receive
// with the first cycle it was visible. Each cycle they check the ramps' visible and
// control-front masks against the queues (a failed expectation).

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "fabric/mesh.h"
#include "hw/ramp.h"
#include "sim/engine/engine.h"

namespace wafersim::test {

class TestPes final : public sim::Clocked, public hw::RampListener {
 public:
  struct Received {
    std::uint64_t cycle;  // first cycle it was visible at the head of its queue (PEs poll every cycle)
    std::uint8_t color;
    std::uint32_t payload;
    bool control;
  };

  TestPes(fabric::Mesh& mesh, sim::Engine& engine) : mesh_(mesh), engine_(engine) {
    mesh.set_arrival_listener(this);
    engine.add(this);
  }

  // Queues a wavelet to send from `pe` on `color` at cycle `at` or later (in order per PE).
  void send(hw::PeCoord pe, std::uint8_t color, std::uint32_t payload, std::uint64_t at = 0, bool control = false) {
    pending_[key(pe)].push_back(Pending{at, color, payload, control});
    engine_.wake(this, sim::Cycle(at));
  }
  // PE `pe` never pops `color` (its receive queue fills and back-pressures the fabric).
  void never_drain(hw::PeCoord pe, std::uint8_t color) { blocked_.insert({key(pe), color}); }
  // PE `pe` pops at most one wavelet every `k` cycles.
  void drain_every(hw::PeCoord pe, std::uint64_t k) { every_[key(pe)] = k; }
  // Keeps polling every cycle until `until` (to observe the exact cycle a wavelet appears).
  void poll_until(std::uint64_t until) {
    poll_until_ = until;
    engine_.wake(this, sim::Cycle(0));
  }

  [[nodiscard]] const std::vector<Received>& received(hw::PeCoord pe) const {
    static const std::vector<Received> none;
    auto it = received_.find(key(pe));
    return it == received_.end() ? none : it->second;
  }
  [[nodiscard]] std::size_t total_received() const {
    std::size_t n = 0;
    for (const auto& [k, v] : received_) n += v.size();
    return n;
  }
  // Cycles at which each PE sent, in order.
  [[nodiscard]] const std::vector<std::uint64_t>& sent_at(hw::PeCoord pe) const {
    static const std::vector<std::uint64_t> none;
    auto it = sent_.find(key(pe));
    return it == sent_.end() ? none : it->second;
  }
  [[nodiscard]] std::uint64_t stalled_sends() const { return stalled_; }

  void evaluate(sim::Cycle now) override {
    const std::uint64_t t = now.count();
    for (auto& [k, queue] : pending_) {
      if (queue.empty() || queue.front().at > t) continue;
      hw::RampPort& port = mesh_.ramp(coord(k));
      const Pending& p = queue.front();
      if (!port.can_send(hw::Color(p.color))) {
        ++stalled_;
        continue;
      }
      port.send(hw::Wavelet{p.payload, hw::Color(p.color), p.control}, now);
      sent_[k].push_back(t);
      queue.erase(queue.begin());
    }
    for (std::uint32_t r = 0; r < mesh_.geometry().routers(); ++r) {
      if (!mesh_.visible(r)) continue;
      hw::RampPort& port = mesh_.ramp(coord(r));
      auto& since = head_since_[r];
      std::uint64_t visible = 0, control = 0;
      for (std::uint32_t c = 0; c < mesh_.colors(); ++c) {
        const hw::Color color(static_cast<std::uint8_t>(c));
        if (!port.has(color)) continue;
        if (!since.count(c)) since[c] = t;
        visible |= std::uint64_t{1} << c;
        if (port.front(color).control) control |= std::uint64_t{1} << c;
      }
      // The masks a core reads instead of the queues say what the queues say, every cycle.
      EXPECT_EQ(port.visible(), visible) << "PE " << r << " cycle " << t;
      EXPECT_EQ(port.control_fronts(), control) << "PE " << r << " cycle " << t;
      // Pop one wavelet per cycle (round robin over colors), unless blocked or throttled.
      auto ev = every_.find(r);
      if (ev != every_.end() && t % ev->second != 0) continue;
      for (std::uint32_t i = 0; i < mesh_.colors(); ++i) {
        const std::uint32_t c = (rr_[r] + i) % mesh_.colors();
        const hw::Color color(static_cast<std::uint8_t>(c));
        if (blocked_.count({r, static_cast<std::uint8_t>(c)}) || !port.has(color)) continue;
        received_[r].push_back(
            Received{since[c], static_cast<std::uint8_t>(c), port.front(color).payload, port.front(color).control});
        since.erase(c);
        port.pop(color, now);
        rr_[r] = c + 1;
        break;
      }
    }
  }

  sim::Cycle write(sim::Cycle now) override {
    for (const auto& [k, queue] : pending_)
      if (!queue.empty()) return now + sim::Cycle(1);
    if (now.count() + 1 < poll_until_) return now + sim::Cycle(1);
    for (std::uint32_t r = 0; r < mesh_.geometry().routers(); ++r)
      if (mesh_.visible(r)) {
        // Something is waiting: poll again (a blocked color keeps it visible, but then the
        // fabric is stuck too and the test ends the run with a limit).
        return now + sim::Cycle(1);
      }
    return sim::Cycle::never();
  }

  [[nodiscard]] std::string describe() const override { return "test PEs"; }

  void on_arrival(hw::PeCoord, hw::Color, sim::Cycle at) override { engine_.wake(this, at); }
  void on_credit(hw::PeCoord, hw::Color, sim::Cycle at) override { engine_.wake(this, at); }

 private:
  struct Pending {
    std::uint64_t at;
    std::uint8_t color;
    std::uint32_t payload;
    bool control;
  };
  [[nodiscard]] std::uint32_t key(hw::PeCoord pe) const { return mesh_.geometry().router(pe); }
  [[nodiscard]] hw::PeCoord coord(std::uint32_t r) const { return mesh_.geometry().coord(r); }

  fabric::Mesh& mesh_;
  sim::Engine& engine_;
  std::map<std::uint32_t, std::vector<Pending>> pending_;
  std::map<std::uint32_t, std::vector<Received>> received_;
  std::map<std::uint32_t, std::vector<std::uint64_t>> sent_;
  std::map<std::uint32_t, std::map<std::uint32_t, std::uint64_t>> head_since_;
  std::map<std::uint32_t, std::uint32_t> rr_;
  std::map<std::uint32_t, std::uint64_t> every_;
  std::set<std::pair<std::uint32_t, std::uint8_t>> blocked_;
  std::uint64_t poll_until_ = 0;
  std::uint64_t stalled_ = 0;
};

}  // namespace wafersim::test

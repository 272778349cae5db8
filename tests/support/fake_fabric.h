#pragma once
// A scripted stand-in for the mesh, implementing the hw::RampPort contract (the listener is
// told in the write phase of cycle t about wavelets and credits usable from t + 1): point-to-point
// links (src PE, color) -> (dst PE, color) with a fixed latency and credit flow control,
// wavelets injected at given cycles, and a sink recording what is sent on unlinked colors.

#include <deque>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "hw/ramp.h"
#include "sim/engine/clocked.h"

namespace wafersim::test {

class FakeFabric final : public sim::Clocked {
 public:
  struct Sent {
    hw::PeCoord pe;
    hw::Wavelet w;
    std::uint64_t cycle;
  };

  explicit FakeFabric(hw::RampListener* listener) : listener_(listener) {}

  hw::RampPort* port(hw::PeCoord pe) {
    auto& p = ports_[key(pe)];
    if (!p) p = std::make_unique<Port>(this, pe);
    return p.get();
  }
  // A wavelet sent by `src` on `out` at cycle t is visible to `dst` on `in` from t + latency
  // (latency >= 1); `depth` credits: at most that many wavelets in flight or queued.
  void link(hw::PeCoord src, hw::Color out, hw::PeCoord dst, hw::Color in, std::uint64_t latency, int depth = 8) {
    links_[{key(src), out.id()}] = Link{dst, in, latency};
    static_cast<Port*>(port(src))->credits[out.id()] = depth;
    port(dst);
  }
  // A wavelet that becomes visible to `dst` on its color from cycle `at` (>= 1).
  void inject(hw::PeCoord dst, hw::Wavelet w, std::uint64_t at) {
    port(dst);
    flights_.push_back(Flight{at, dst, w.color, w, hw::PeCoord{}, hw::Color{}, false});
  }
  // Credits for sends on an unlinked color (the sink); default unlimited.
  void limit_sink(hw::PeCoord pe, hw::Color c, int credits) { static_cast<Port*>(port(pe))->credits[c.id()] = credits; }
  void return_sink_credit(hw::PeCoord pe, hw::Color c, std::uint64_t at) { credit_returns_.push_back({at, pe, c}); }

  std::vector<Sent> sent;  // wavelets sent on unlinked colors

  void evaluate(sim::Cycle) override {}
  sim::Cycle write(sim::Cycle now) override {
    const std::uint64_t t = now.count();
    for (auto it = flights_.begin(); it != flights_.end();) {
      if (it->visible <= t + 1) {
        auto* p = static_cast<Port*>(port(it->dst));
        p->in[it->color.id()].push_back(Queued{it->w, it->linked, it->src, it->src_color});
        listener_->on_arrival(it->dst, it->color, now + sim::Cycle(1));  // visible from the next cycle
        it = flights_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = credit_returns_.begin(); it != credit_returns_.end();) {
      if (it->at <= t + 1) {
        ++static_cast<Port*>(port(it->pe))->credits[it->color.id()];
        listener_->on_credit(it->pe, it->color, now + sim::Cycle(1));
        it = credit_returns_.erase(it);
      } else {
        ++it;
      }
    }
    return flights_.empty() && credit_returns_.empty() ? sim::Cycle::never() : now + sim::Cycle(1);
  }
  std::string describe() const override { return "fake fabric"; }
  [[nodiscard]] bool idle() const { return flights_.empty() && credit_returns_.empty(); }

 private:
  struct Queued {
    hw::Wavelet w;
    bool linked;
    hw::PeCoord src;
    hw::Color src_color;
  };
  struct Flight {
    std::uint64_t visible;
    hw::PeCoord dst;
    hw::Color color;
    hw::Wavelet w;
    hw::PeCoord src;
    hw::Color src_color;
    bool linked;
  };
  struct CreditReturn {
    std::uint64_t at;
    hw::PeCoord pe;
    hw::Color color;
  };
  struct Link {
    hw::PeCoord dst;
    hw::Color color;
    std::uint64_t latency;
  };
  struct Port final : hw::RampPort {
    Port(FakeFabric* f, hw::PeCoord p) : fabric(f), pe(p) {
      for (auto& c : credits) c = 1 << 30;
    }
    bool has(hw::Color c) const override { return !in[c.id()].empty(); }
    std::uint64_t visible() const override {
      std::uint64_t m = 0;
      for (unsigned c = 0; c < 64; ++c) m |= std::uint64_t{!in[c].empty()} << c;
      return m;
    }
    std::uint64_t control_fronts() const override {
      std::uint64_t m = 0;
      for (unsigned c = 0; c < 64; ++c) m |= std::uint64_t{!in[c].empty() && in[c].front().w.control} << c;
      return m;
    }
    hw::Wavelet front(hw::Color c) const override {
      if (in[c.id()].empty()) throw std::logic_error("front() of an empty ramp queue");
      return in[c.id()].front().w;
    }
    void pop(hw::Color c, sim::Cycle now) override {
      if (in[c.id()].empty()) throw std::logic_error("pop() of an empty ramp queue");
      const Queued q = in[c.id()].front();
      in[c.id()].pop_front();
      if (q.linked) fabric->credit_returns_.push_back({now.count() + 1, q.src, q.src_color});
    }
    bool can_send(hw::Color c) const override { return credits[c.id()] > 0; }
    void send(const hw::Wavelet& w, sim::Cycle now) override {
      if (credits[w.color.id()] <= 0) throw std::logic_error("send() without a credit");
      --credits[w.color.id()];
      auto l = fabric->links_.find({FakeFabric::key(pe), w.color.id()});
      if (l == fabric->links_.end()) {
        fabric->sent.push_back(Sent{pe, w, now.count()});
        return;
      }
      hw::Wavelet moved = w;
      moved.color = l->second.color;
      fabric->flights_.push_back(
          Flight{now.count() + l->second.latency, l->second.dst, l->second.color, moved, pe, w.color, true});
    }
    FakeFabric* fabric;
    hw::PeCoord pe;
    std::deque<Queued> in[64];
    int credits[64];
  };
  static std::uint32_t key(hw::PeCoord p) { return std::uint32_t{p.x} << 16 | p.y; }

  hw::RampListener* listener_;
  std::map<std::uint32_t, std::unique_ptr<Port>> ports_;
  std::map<std::pair<std::uint32_t, std::uint8_t>, Link> links_;
  std::vector<Flight> flights_;
  std::vector<CreditReturn> credit_returns_;
};

}  // namespace wafersim::test

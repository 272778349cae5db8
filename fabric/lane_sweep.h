#pragma once
// The routers swept eight at a time in vector lanes (fabric/lane_routers.h) behind the seam of
// fabric/router_sweep.h: the lanes' counters and readers as the mesh reads them, their
// ejections and ramp credits into the mesh's endpoint side, and when a mesh may use them.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/band_stage.h"
#include "fabric/expected_traffic.h"
#include "fabric/lane_routers.h"
#include "fabric/router_sweep.h"
#include "sim/parallel/row_bands.h"

namespace wafersim::fabric {

class Mesh;

class LaneSweep final : public RouterSweep, private LaneRouters::Ends {
 public:
  // From this many expected wavelet moves per router and cycle on: below it most routers idle
  // in most cycles and the routers' own sweep, which visits only busy ones, is faster
  // (docs/performance.md, "Routers in vector lanes").
  static constexpr double kMinMoves = 1.0;

  // Whether a mesh carrying `traffic` sweeps its routers in lanes: in builds with AVX2, with a
  // promise of single-wavelet packets on at most LaneRouters::kColors colors (and no more than
  // the fabric has), kMinMoves moves or more, XY routing over 1-cycle hops and ramps, no
  // per-color link counters or tracing counters, queues of at most LaneRouters::kMaxDepth and
  // at most LaneRouters::kMaxRouters routers in rows of at most LaneRouters::kMaxWidth.
  [[nodiscard]] static bool fits(const Mesh& mesh, const ExpectedTraffic& traffic);

  // The routers of `mesh`, whose senders keep to single-wavelet packets on colors 0 .. colors - 1;
  // with `bands` (more than one), swept band by band on their team.
  LaneSweep(Mesh& mesh, std::uint32_t colors, sim::parallel::RowBands* bands);

  [[nodiscard]] LaneRouters& lanes() { return lanes_; }

  // Mesh::read_band's steps: endpoint ep popped a wavelet of color c (a credit for its router's
  // ramp output from the next sweep on); the others do not occur in lanes. Read on the caller's
  // thread, band after band.
  static constexpr bool kReadsInBands = false;
  void popped(std::uint32_t /*band*/, std::uint32_t ep, std::uint32_t c) { lanes_.ramp_output_freed(ep, c); }
  void ramps_sent(std::uint32_t /*band*/, std::uint32_t /*parity*/) {}
  [[noreturn]] void push_visible(std::uint32_t r, std::uint32_t p, std::uint32_t c, Flit f, std::uint64_t now,
                                 Counters& n) const;

  // RouterSweep
  void read(std::uint64_t t) override;
  std::uint64_t write(std::uint64_t t) override;
  [[nodiscard]] bool busy() const override { return lanes_.busy(); }
  void routes_changed(const RouteTable* table, const std::vector<RouteChange>& changes) override;
  [[nodiscard]] std::uint64_t port_forwarded(std::uint32_t r, std::uint32_t p) const override {
    return lanes_.forwarded(r, p);
  }
  [[nodiscard]] std::uint64_t port_stalled(std::uint32_t r, std::uint32_t p) const override {
    return lanes_.stalled(r, p);
  }
  [[nodiscard]] std::uint64_t port_occupancy(std::uint32_t r, std::uint32_t p) const override {
    return lanes_.occupancy(r, p);
  }
  [[nodiscard]] bool arriving(std::uint32_t r, std::uint32_t p, std::uint32_t parity) const override {
    return lanes_.arriving(r, p, parity);
  }
  [[nodiscard]] LinkCounters link_color_counters(std::uint32_t r, std::uint32_t p, std::uint32_t c,
                                                 std::uint64_t evaluated) const override;
  [[nodiscard]] std::uint64_t queued_colors(std::uint32_t r, std::uint32_t p) const override;
  [[nodiscard]] std::uint32_t queued(std::uint32_t r, std::uint32_t p, std::uint32_t c) const override {
    return c < LaneRouters::kColors ? lanes_.queued(r, p, c) : 0u;
  }
  [[nodiscard]] Flit queued_flit(std::uint32_t r, std::uint32_t p, std::uint32_t c, std::uint32_t i) const override {
    return lanes_.queued_flit(r, p, c, i);
  }
  // (Single-wavelet packets hold no output past their one wavelet.)
  [[nodiscard]] std::uint32_t head_route(std::uint32_t, std::uint32_t, std::uint32_t) const override { return 0; }
  [[nodiscard]] bool out_of_credit(std::uint32_t r, std::uint32_t o, std::uint32_t c) const override {
    return lanes_.credits(r, o, c) == 0;  // (the ramp output's too)
  }
  [[nodiscard]] std::uint32_t holder(std::uint32_t, std::uint32_t, std::uint32_t) const override { return kNone; }
  [[nodiscard]] std::uint32_t touched_routers() const override;
  [[nodiscard]] const std::vector<std::uint32_t>& counted_routers() const override { return no_routers_; }
  [[nodiscard]] std::uint64_t allocated_bytes() const override { return lanes_.allocated_bytes(); }
  [[nodiscard]] bool vector_lanes() const override { return true; }
  [[nodiscard]] std::string describe() const override { return "routers in vector lanes"; }

 private:
  // LaneRouters::Ends: the ejections and the ramp input's freed slots, into the endpoint side
  // (staged for the join when `stage` is set: a band's part).
  struct Band final : LaneRouters::Ends {
    LaneSweep* sweep = nullptr;
    BandStage* stage = nullptr;
    Counters* counts = nullptr;
    LaneRouters::Swept swept;
    void eject(std::uint32_t r, std::uint32_t c, Flit f, std::uint64_t t) override;
    void ramp_freed(std::uint32_t r, std::uint32_t c, std::uint64_t t) override;
  };
  void eject(std::uint32_t r, std::uint32_t c, Flit f, std::uint64_t t) override;
  void ramp_freed(std::uint32_t r, std::uint32_t c, std::uint64_t t) override;
  // The sweep in bands, on the team.
  std::uint64_t write_bands(std::uint64_t t);

  Mesh& mesh_;
  sim::parallel::RowBands* partition_;  // null: one band
  std::vector<Band> bands_;
  LaneRouters lanes_;
  std::uint32_t colors_;  // the promise's colors
  bool idle_skip_;
  std::uint64_t processed_ = 0;  // last cycle written + 1
  std::vector<std::uint32_t> no_routers_;
};

}  // namespace wafersim::fabric

#pragma once
// The seam between a mesh and the sweep of its routers. The mesh (fabric/mesh.h) keeps the
// endpoint side: ramps and edge channels, their receive queues and credits, the timing wheel,
// the deadlock watchdog, statistics and tracing. The routers' queues, arbitration and moves
// are one of two implementations of this interface, chosen once when the mesh is built from
// the traffic it is told to expect (fabric/expected_traffic.h):
// - BlockRouters (fabric/block_routers.h): the routers' own sweep, one busy router at a time;
//   any routing, latencies and counters;
// - LaneSweep (fabric/lane_sweep.h): eight routers at a time in vector lanes, for heavy
//   single-wavelet XY traffic (docs/fabric.md, "Routers in vector lanes").
// Both are the same model, wavelet for wavelet (tests/unit/fabric_lanes_test.cpp).
//
// Contract: the mesh calls read() and write() once per cycle, in its own read and write
// phases, and the readers between phases. Nothing here is called per router or per wavelet:
// the per-wavelet steps that cross the seam are inline (the ramp's wavelet into its router,
// fabric/ramp_inlet.h; the endpoint side's steps in read(), Mesh::read_phase).
// A mesh given more than one band (MeshOptions::bands) has write() sweep the bands as the
// parts of one job: the routers' work and every counter are those of one sweep, and the
// mesh's endpoint side takes what the bands staged in band order (fabric/band_stage.h).

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/flit.h"
#include "fabric/port.h"

namespace wafersim::fabric {

class RouteTable;
struct RouteChange;

// Cumulative counters of one router port, for tracing (mesh_trace.cpp).
struct LinkCounters {
  std::uint64_t forwarded = 0;  // wavelets sent through the output
  std::uint64_t stalled = 0;    // output-color-cycles without credit downstream
  std::uint64_t occupancy = 0;  // occupancy integral of the input queues (wavelet-cycles)
  std::uint32_t queued = 0;     // wavelets visible in the input queues now
};

class RouterSweep {
 public:
  static constexpr std::uint32_t kNone = 0xffffffffu;

  // The fabric's totals. The sweep counts its grants, credit stalls, occupancy and the queued
  // wavelets per color and input direction; the mesh's endpoint side counts its sends into
  // the network and its ramps' sends into the queues. Kept with the sweep, so that its loops
  // reach them without another base pointer.
  struct Counters {
    std::uint64_t in_network = 0;              // wavelets in router queues or on links between routers
    std::uint64_t forwarded = 0, stalled = 0;  // grants; output-color-cycles without credit
    // Work, not model statistics: router visits, and grants on arrival past the queues.
    std::uint64_t evaluations = 0, bypassed = 0;
    // [color] (0 .. 63): grants, credit stalls, occupancy integral, wavelets queued now.
    std::uint64_t color_forwarded[64] = {}, color_stalled[64] = {}, color_occupancy[64] = {}, color_queued[64] = {};
    // [input direction]: occupancy integral; wavelets queued or arriving over 1-cycle links now.
    std::uint64_t dir_occupancy[kPorts] = {}, dir_queued[kPorts] = {};
  };

  RouterSweep() = default;
  virtual ~RouterSweep() = default;
  RouterSweep(const RouterSweep&) = delete;
  RouterSweep& operator=(const RouterSweep&) = delete;

  [[nodiscard]] Counters& counters() { return counters_; }
  [[nodiscard]] const Counters& counters() const { return counters_; }

  // The read phase of cycle t: the endpoint side's part (Mesh::read_phase) with the sweep's
  // per-wavelet steps inline: credits and wavelets due at routers, slots endpoints freed.
  virtual void read(std::uint64_t t) = 0;
  // The write phase of cycle t: every router with work takes in what arrived, counts
  // occupancy, grants its outputs and moves the granted wavelets. Returns the grants.
  virtual std::uint64_t write(std::uint64_t t) = 0;
  // Whether a router holds or is sent a wavelet or a credit (the mesh ticks the next cycle).
  [[nodiscard]] virtual bool busy() const = 0;
  // Static routes only: the mesh rebuilt its routes around a failed part (fabric/reroute.h) at
  // the start of a write phase; the heads queued at the routers `changes` names take the new
  // routes (a multicast copy already sent over a dropped output is not sent again).
  virtual void routes_changed(const RouteTable* table, const std::vector<RouteChange>& changes) = 0;

  // Counters of router r's port p through the last cycle written: wavelets sent through output
  // p, its output-color-cycles without credit, the occupancy integral of input p.
  [[nodiscard]] virtual std::uint64_t port_forwarded(std::uint32_t r, std::uint32_t p) const = 0;
  [[nodiscard]] virtual std::uint64_t port_stalled(std::uint32_t r, std::uint32_t p) const = 0;
  [[nodiscard]] virtual std::uint64_t port_occupancy(std::uint32_t r, std::uint32_t p) const = 0;
  // Whether a wavelet for input p of router r is in its arrival register of `parity` (sent
  // over a 1-cycle link or ramp in a cycle of that parity, taken in in the next).
  [[nodiscard]] virtual bool arriving(std::uint32_t r, std::uint32_t p, std::uint32_t parity) const = 0;
  // Per link and color, for meshes that keep per-color link counters (the routers' own sweep
  // only): the counters of port p, color c, up to now; `evaluated` is the last cycle + 1 the
  // mesh evaluated (past the last one written: that cycle's occupancy is counted from now).
  [[nodiscard]] virtual LinkCounters link_color_counters(std::uint32_t r, std::uint32_t p, std::uint32_t c,
                                                         std::uint64_t evaluated) const = 0;

  // A router input queue, as the deadlock report and the queued counts read it: the colors
  // with wavelets at input p, the wavelets of queue (p, c) and the i-th of them (0: the head),
  // the outputs its head was already sent to (static routes) or its packet holds + 1 (XY).
  [[nodiscard]] virtual std::uint64_t queued_colors(std::uint32_t r, std::uint32_t p) const = 0;
  [[nodiscard]] virtual std::uint32_t queued(std::uint32_t r, std::uint32_t p, std::uint32_t c) const = 0;
  [[nodiscard]] virtual Flit queued_flit(std::uint32_t r, std::uint32_t p, std::uint32_t c, std::uint32_t i) const = 0;
  [[nodiscard]] virtual std::uint32_t head_route(std::uint32_t r, std::uint32_t p, std::uint32_t c) const = 0;
  // Whether output o of router r has no credit for color c (a link's, or its endpoint's
  // receive queue); the input whose packet holds color c of output o (XY wormhole), or kNone.
  [[nodiscard]] virtual bool out_of_credit(std::uint32_t r, std::uint32_t o, std::uint32_t c) const = 0;
  [[nodiscard]] virtual std::uint32_t holder(std::uint32_t r, std::uint32_t o, std::uint32_t c) const = 0;

  // Routers that were ever sent a wavelet (taken in, or in an arrival register now).
  [[nodiscard]] virtual std::uint32_t touched_routers() const = 0;
  // Routers whose per-port counters are allocated, in allocation order (empty if none are).
  [[nodiscard]] virtual const std::vector<std::uint32_t>& counted_routers() const = 0;
  [[nodiscard]] virtual std::uint64_t allocated_bytes() const = 0;
  // Whether this is the sweep in vector lanes; its state in a few words, for Mesh::describe.
  [[nodiscard]] virtual bool vector_lanes() const = 0;
  [[nodiscard]] virtual std::string describe() const = 0;

  // With bands (sim/parallel/row_bands.h): a job ended (the mesh has folded its stages):
  // apply what the bands left for each other (moves and credits across a band boundary); the
  // partition changed (`old_first`: the first row of each band before, the row count last):
  // move what the sweep keeps per band.
  virtual void joined() {}
  virtual void repartitioned(const std::vector<std::uint32_t>& /*old_first*/) {}

 protected:
  Counters counters_;
};

}  // namespace wafersim::fabric

#pragma once
// The cyclic shift of MeshGEMM (WaferLLM, OSDI 2025, arXiv 2502.04563) along one line of a
// mesh region: the line's PEs ordered as a ring that visits the even indices upward and the
// odd ones back down (0, 2, 4, ..., 5, 3, 1), so that ring neighbours are at most two hops
// apart, including the wrap from the last position back to the first. A shift moves every
// PE's block to its ring predecessor on one color per flow; flows that share a router get
// different colors (docs/compiler.md, "Prefill").
//
// On a rectangle the longer lines hold more PEs than the ring has positions: a ring of P
// positions over a line of L PEs (P <= L <= 2P) gives each position a unit of one or two
// neighbouring PEs (unit u: PEs [floor(u L / P), floor((u + 1) L / P))), ordered as above.
// A unit's sender (the member nearer its predecessor) sends, and its stream reaches every
// member of the predecessor's unit; in a unit of two the other member sends to the sender
// on the pair color (a partial sum to be added).

#include <cstdint>
#include <vector>

#include "fabric/route_table.h"
#include "models/mesh/region.h"

namespace wafersim::models::mesh {

class Ring {
 public:
  Ring() = default;  // a line of one PE
  // Contract: 1 <= positions <= length <= 2 positions (std::logic_error otherwise); `pool` the
  // colors the ring's flows may use (throws std::logic_error when they do not suffice: four
  // always do); `pair` the pair color (used only by units of two).
  Ring(Axis axis, std::uint32_t length, std::vector<std::uint8_t> pool);
  Ring(Axis axis, std::uint32_t length, std::uint32_t positions, std::vector<std::uint8_t> pool, std::uint8_t pair);
  [[nodiscard]] Axis axis() const { return axis_; }
  [[nodiscard]] std::uint32_t length() const { return n_; }         // PEs
  [[nodiscard]] std::uint32_t positions() const { return units_; }  // ring positions
  // The ring position of the unit of the PE at line index i, and the sender at position p.
  [[nodiscard]] std::uint32_t position(std::uint32_t i) const { return pos_.at(i); }
  [[nodiscard]] std::uint32_t index(std::uint32_t p) const { return sender_.at(order_.at(p)); }
  // The members of the unit at ring position p: line indices [first, first + count).
  [[nodiscard]] std::uint32_t first(std::uint32_t p) const { return start_.at(order_.at(p)); }
  [[nodiscard]] std::uint32_t members(std::uint32_t p) const;
  // Whether PE i sends on the ring (its unit's sender), and whether its unit has two members.
  [[nodiscard]] bool sends(std::uint32_t i) const { return sender_.at(unit_.at(i)) == i; }
  [[nodiscard]] bool paired(std::uint32_t i) const { return members(pos_.at(i)) == 2; }
  // The color PE i's unit sends its block on (to its predecessor) and receives the next one on
  // (from its successor).
  [[nodiscard]] std::uint8_t send_color(std::uint32_t i) const { return send_.at(unit_.at(i)); }
  [[nodiscard]] std::uint8_t recv_color(std::uint32_t i) const;
  [[nodiscard]] std::uint8_t pair_color() const { return pair_; }
  // The most hops a shift moves a block to the farthest member of its receiving unit.
  [[nodiscard]] std::uint32_t max_hops() const;

 private:
  // The line indices a flow from ring position p's sender passes to the far member of its
  // predecessor's unit, in order.
  [[nodiscard]] std::vector<std::uint32_t> flow(std::uint32_t p) const;
  Axis axis_ = Axis::Column;
  std::uint32_t n_ = 1, units_ = 1;
  std::uint8_t pair_ = 0;
  std::vector<std::uint32_t> order_{0};     // unit at ring position p
  std::vector<std::uint32_t> start_{0, 1};  // unit u's first PE (and the end)
  std::vector<std::uint32_t> unit_{0}, pos_{0}, sender_{0};
  std::vector<std::uint8_t> send_{0};  // per unit
};

// Sets the ring's routes on every line of `region` along its axis, and the pair flows of its
// units of two (the (router, color) entries must be empty: std::logic_error otherwise).
void add_routes(fabric::RouteTable& table, const Region& region, const Ring& ring);

}  // namespace wafersim::models::mesh

#pragma once
// The cyclic shift of MeshGEMM (WaferLLM, OSDI 2025, arXiv 2502.04563) along one line of a
// mesh region: the line's PEs ordered as a ring that visits the even indices upward and the
// odd ones back down (0, 2, 4, ..., 5, 3, 1), so that ring neighbours are at most two hops
// apart, including the wrap from the last position back to the first. A shift moves every
// PE's block to its ring predecessor on one color per flow; flows that share a router get
// different colors (docs/compiler.md, "Prefill").

#include <cstdint>
#include <vector>

#include "fabric/route_table.h"
#include "models/mesh/region.h"

namespace wafersim::models::mesh {

class Ring {
 public:
  Ring() = default;  // a line of one PE
  // Contract: length >= 1; `pool` the colors the ring may use (throws std::logic_error when
  // they do not suffice: four always do).
  Ring(Axis axis, std::uint32_t length, std::vector<std::uint8_t> pool);
  [[nodiscard]] Axis axis() const { return axis_; }
  [[nodiscard]] std::uint32_t length() const { return n_; }
  // The ring position of the PE at line index i, and the index at ring position p.
  [[nodiscard]] std::uint32_t position(std::uint32_t i) const { return pos_.at(i); }
  [[nodiscard]] std::uint32_t index(std::uint32_t p) const { return order_.at(p); }
  // The color PE i sends its block on (to its predecessor) and receives the next one on (from
  // its successor).
  [[nodiscard]] std::uint8_t send_color(std::uint32_t i) const { return send_.at(i); }
  [[nodiscard]] std::uint8_t recv_color(std::uint32_t i) const;
  // The most hops a shift moves a block (at most 2).
  [[nodiscard]] std::uint32_t max_hops() const;

 private:
  Axis axis_ = Axis::Column;
  std::uint32_t n_ = 1;
  std::vector<std::uint32_t> order_{0}, pos_{0};
  std::vector<std::uint8_t> send_{0};
};

// Sets the ring's routes on every line of `region` along its axis (the (router, color)
// entries must be empty: std::logic_error otherwise).
void add_routes(fabric::RouteTable& table, const Region& region, const Ring& ring);

}  // namespace wafersim::models::mesh

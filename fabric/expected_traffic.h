#pragma once
// What a mesh is told, when it is built, about the traffic it will carry. The mesh picks the
// sweep of its routers from it (fabric/router_sweep.h): synthetic traffic knows its load in
// advance (TrafficGenerator::expected_traffic); a mesh told nothing sweeps its routers one at a
// time, which suits any traffic.

#include <cstdint>

namespace wafersim::fabric {

struct ExpectedTraffic {
  // Wavelet moves per router and cycle the load asks for (grants over every output, the
  // ejection included).
  double moves = 0;
  // Nonzero: a promise that only the ramps send, only single-wavelet packets (head and tail in
  // one wavelet), only on colors 0 .. single_wavelet_colors - 1. A mesh whose sweep relies on
  // it refuses other sends (std::logic_error).
  std::uint32_t single_wavelet_colors = 0;
};

}  // namespace wafersim::fabric

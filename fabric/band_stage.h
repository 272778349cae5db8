#pragma once
// What one band of a parallel phase leaves for the join (sim/parallel/row_bands.h), for a mesh:
// the deltas of the fabric's counters and the effects on the mesh's shared state (wavelets on
// links into other bands, the listeners' notices, the mesh's own wake-ups), each list in the
// order the band made them. Mesh::joined folds the bands in band order, which is the order of
// the serial sweep (both visit routers and cores in ascending index, and a band is a range of
// them). What a band does to its own rows' read phase (Mesh::BandReads) it queues there itself.

#include <cstdint>
#include <vector>

#include "fabric/flit.h"
#include "fabric/router_sweep.h"
#include "sim/types.h"

namespace wafersim::fabric {

// A wavelet on a link, due at the start of a later cycle.
struct Transit {
  std::uint32_t target;  // router * 5 + port, or endpoint
  std::uint16_t to_endpoint;
  std::uint16_t color;
  Flit flit;
};

// A slot freed in an endpoint's receive queue, or a credit back to an endpoint's sends.
struct EndpointReturn {
  std::uint32_t target;  // endpoint
  std::uint32_t color;
};

struct alignas(64) BandStage {
  RouterSweep::Counters counts;  // deltas (modulo 2^64)
  std::uint64_t injected = 0;
  // The ramps' sends over 1-cycle ramps by cycle parity, in total and per color (Mesh::ramp_sent_).
  std::uint32_t ramp_sent[2] = {};
  std::uint32_t ramp_sent_colors[2][64] = {};
  struct Due {
    std::uint64_t at;
    Transit transit;
  };
  std::vector<Due> transits;      // into any band's read phase
  std::uint64_t wheel_added = 0;  // transits the band queued for its own read phase
  std::uint64_t delivered = 0;    // wavelets into receive queues, in a read phase of bands
  // The listeners' calls: a wavelet on its way into endpoint ep's receive queue, or a credit
  // back to its sends, from `at`; or, for a ramp listener that splits them, the wake-up left
  // of one whose PE's part the band made (hw::RampListener::arrived_in_band, credited_in_band).
  enum class Kind : std::uint8_t { Arrival, Credit, Wake };
  struct Notice {
    std::uint32_t ep;
    std::uint32_t color;
    std::uint64_t at;
    Kind kind;
  };
  std::vector<Notice> notices;
  // The mesh's own wake-ups asked for by its endpoints' sends and pops (0: none).
  std::uint64_t wake_send = 0, wake_pop = 0;
};

}  // namespace wafersim::fabric

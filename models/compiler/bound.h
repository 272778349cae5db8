#pragma once
// The analytical lower bound on a layer's cycles: each resource's work divided by what it can
// do per cycle; the layer cannot finish sooner than its busiest resource allows.

#include "models/compiler/layer_program.h"
#include "models/compiler/target.h"

namespace wafersim::models::compiler {

// compute: the busiest PE's datapath steps or instruction issues (one each per cycle);
// SRAM ports: its port-word reads / read ports and writes / write ports; fabric: its ramp
// (one wavelet each way per cycle) and the busiest router link (one per cycle); edge I/O:
// the busiest edge channel (one wavelet per cycle).
Bound bound_of(const Work& w, const Target& target);

}  // namespace wafersim::models::compiler

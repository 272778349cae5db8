#pragma once
// The one step of the routers that the mesh's endpoint side starts per wavelet: a ramp's
// wavelet into its router. A virtual call per wavelet would cost more than the step, so the
// mesh reaches the sweep it chose (fabric/router_sweep.h) through this instead: a pointer to
// each kind, one of them set when the mesh is built, and inline calls.

#include <cassert>
#include <cstdint>

#include "fabric/block_routers.h"
#include "fabric/flit.h"
#include "fabric/lane_routers.h"

namespace wafersim::fabric {

class RampInlet {
 public:
  RampInlet() = default;
  explicit RampInlet(BlockRouters& own) : own_(&own) {}
  explicit RampInlet(LaneRouters& lanes) : lanes_(&lanes) {}

  // The wavelet f that router r's ramp sent on color c in cycle t over a 1-cycle ramp: in the
  // router's ramp arrival register, taken in in cycle t + 1.
  void arrive(std::uint32_t r, std::uint32_t c, Flit f, std::uint64_t t) const {
    if (own_)
      own_->from_ramp(r, c, f, t);
    else
      lanes_->inject(r, c, f, t);
  }
  // Router r is sent a wavelet over the wheel (a longer ramp, or an edge channel): its state is
  // allocated and it counts as used. (The lanes take neither: they are chosen only for 1-cycle
  // ramps and meshes whose edge channels do not send.)
  void reserve(std::uint32_t r) const {
    assert(own_);
    own_->reserve(r);
  }

 private:
  BlockRouters* own_ = nullptr;
  LaneRouters* lanes_ = nullptr;
};

}  // namespace wafersim::fabric

#pragma once
// Per-link extra latency of a mesh whose links are not all one hop: on a defective wafer a
// logical link may be a detour over the physical fabric (fabric/defects/remap.h), which takes
// longer than fabric.hop_latency. Set once when the mesh is assembled; a mesh without it (or
// with every extra zero) has uniform links and sweeps its routers exactly as before.

#include <algorithm>
#include <cstdint>
#include <vector>

namespace wafersim::fabric {

class LinkDelays {
 public:
  explicit LinkDelays(std::uint32_t routers) : extra_(std::size_t{routers} * 4, 0) {}

  // Link output o (0 .. 3: north, east, south, west) of router r takes `cycles` more than
  // fabric.hop_latency. The caller sets both directions of a link.
  void set_extra(std::uint32_t r, std::uint32_t o, std::uint16_t cycles) {
    extra_[std::size_t{r} * 4 + o] = cycles;
    max_ = std::max<std::uint32_t>(max_, cycles);
  }
  [[nodiscard]] std::uint32_t extra(std::uint32_t r, std::uint32_t o) const { return extra_[std::size_t{r} * 4 + o]; }
  // [router * 4 + output], for the sweep's loop.
  [[nodiscard]] const std::uint16_t* data() const { return extra_.data(); }
  [[nodiscard]] std::uint32_t routers() const { return static_cast<std::uint32_t>(extra_.size() / 4); }
  [[nodiscard]] std::uint32_t max_extra() const { return max_; }
  [[nodiscard]] bool any() const { return max_ != 0; }

 private:
  std::vector<std::uint16_t> extra_;
  std::uint32_t max_ = 0;
};

}  // namespace wafersim::fabric

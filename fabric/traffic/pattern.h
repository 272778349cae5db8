#pragma once
// Synthetic traffic patterns: where a packet from a source router goes (Dally & Towles,
// "Principles and Practices of Interconnection Networks", ch. 3; the usual NoC set).

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/traffic/rng.h"
#include "hw/types.h"

namespace wafersim::fabric::traffic {

enum class PatternKind { Uniform, Transpose, BitComplement, BitReverse, Shuffle, Tornado, Neighbor, Hotspot };

// Destinations on a width x height mesh; routers numbered y * width + x.
class Pattern {
 public:
  // Throws sim::InputError for an unknown name or a pattern the mesh cannot have
  // (transpose needs a square mesh; bit-reverse and shuffle a power-of-two router count).
  static Pattern make(const std::string& name, std::uint32_t width, std::uint32_t height, hw::PeCoord hotspot = {},
                      double hotspot_fraction = 0.1);
  // "uniform", "transpose", ...
  static const std::vector<std::string>& names();

  // Destination router of a packet created at `src` (may be `src` itself for the
  // permutations, e.g. the diagonal under transpose; never under uniform).
  [[nodiscard]] std::uint32_t destination(std::uint32_t src, SplitMix64& rng) const {
    return kind_ == PatternKind::Uniform ? uniform_other(src, rng) : by_kind(src, rng);
  }

  [[nodiscard]] PatternKind kind() const { return kind_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  // Throughput bound in wavelets per node per cycle for XY routing on this mesh, when
  // known in closed form (uniform: bisection 4/k on a k x k mesh; transpose: the busiest
  // row channel, 1/(k-1)); 0 otherwise.
  [[nodiscard]] double bound() const;

 private:
  Pattern(PatternKind k, std::string name, std::uint32_t w, std::uint32_t h)
      : kind_(k), name_(std::move(name)), w_(w), h_(h) {}
  // A router other than src, uniformly.
  [[nodiscard]] std::uint32_t uniform_other(std::uint32_t src, SplitMix64& rng) const {
    const std::uint32_t d = rng.below(w_ * h_ - 1);
    return d >= src ? d + 1 : d;
  }
  // destination() through the switch over all patterns (destination() takes uniform inline).
  [[nodiscard]] std::uint32_t by_kind(std::uint32_t src, SplitMix64& rng) const;

  PatternKind kind_;
  std::string name_;
  std::uint32_t w_, h_;
  std::uint32_t bits_ = 0;  // log2(routers) for the bit permutations
  std::uint32_t hotspot_ = 0;
  double fraction_ = 0;
};

}  // namespace wafersim::fabric::traffic

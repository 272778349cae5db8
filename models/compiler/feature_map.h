#pragma once
// How a tensor's features are divided among the slices (the used rows) of the layout.

#include <cstdint>
#include <vector>

#include "models/compiler/target.h"

namespace wafersim::models::compiler {

// Even: slice s holds the contiguous features split(F, slices, s). Heads: the features come
// in `groups` contiguous groups (the attention heads that share one key/value head) and
// group g lives whole on slice g * slices / groups, so that attention finds a query head's,
// its key's and its value's features on one row. A slice's features are stored in its
// runs' order (ascending).
struct FeatureMap {
  enum class Kind : std::uint8_t { Even, Heads };
  Kind kind = Kind::Even;
  std::uint64_t features = 0;
  std::uint32_t slices = 1;
  std::uint32_t groups = 1;  // Heads

  static FeatureMap even(std::uint64_t features, std::uint32_t slices) { return {Kind::Even, features, slices, 1}; }
  static FeatureMap heads(std::uint64_t features, std::uint32_t slices, std::uint32_t groups) {
    return {Kind::Heads, features, slices, groups};
  }

  [[nodiscard]] std::uint64_t group_features() const { return features / groups; }
  [[nodiscard]] std::uint32_t slice_of_group(std::uint32_t g) const {
    return static_cast<std::uint32_t>(std::uint64_t{g} * slices / groups);
  }
  // The contiguous feature ranges of slice s, in storage order.
  [[nodiscard]] std::vector<Span> runs(std::uint32_t s) const;
  [[nodiscard]] std::uint64_t count(std::uint32_t s) const;
  [[nodiscard]] std::uint64_t max_count() const;
  // The slice holding feature f, and f's position in that slice's storage.
  [[nodiscard]] std::uint32_t owner(std::uint64_t f) const;
  [[nodiscard]] std::uint64_t position(std::uint64_t f) const;
  friend bool operator==(const FeatureMap& a, const FeatureMap& b) {
    return a.kind == b.kind && a.features == b.features && a.slices == b.slices && a.groups == b.groups;
  }
  friend bool operator!=(const FeatureMap& a, const FeatureMap& b) { return !(a == b); }
};

}  // namespace wafersim::models::compiler

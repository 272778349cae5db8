#pragma once
// How a tensor's features are divided among the slices (the used rows) of the layout.

#include <cstdint>
#include <vector>

#include "models/compiler/target.h"

namespace wafersim::models::compiler {

// Even: slice s holds the contiguous features split(F, slices, s). Heads: the features come
// in `groups` contiguous groups (the attention heads that share one key/value head) and
// group g lives whole on slice g * slices / groups, so that attention finds a query head's,
// its key's and its value's features on one row. HeadParts (fewer groups than slices): group
// g gets the slices [g * slices / groups, (g + 1) * slices / groups), at most `head_dim` of
// them (its parts), and part r holds the dimensions split(head_dim, parts, r) of every head
// of the group, so that a head's dot products run down the column in dimension order; the
// slices beyond the parts hold nothing. A slice's features are stored in its runs' order
// (ascending).
struct FeatureMap {
  enum class Kind : std::uint8_t { Even, Heads, HeadParts };
  Kind kind = Kind::Even;
  std::uint64_t features = 0;
  std::uint32_t slices = 1;
  std::uint32_t groups = 1;    // Heads, HeadParts
  std::uint64_t head_dim = 1;  // HeadParts

  static FeatureMap even(std::uint64_t features, std::uint32_t slices) { return {Kind::Even, features, slices, 1, 1}; }
  static FeatureMap heads(std::uint64_t features, std::uint32_t slices, std::uint32_t groups) {
    return {Kind::Heads, features, slices, groups, 1};
  }
  static FeatureMap head_parts(std::uint64_t features, std::uint32_t slices, std::uint32_t groups,
                               std::uint64_t head_dim) {
    return {Kind::HeadParts, features, slices, groups, head_dim};
  }

  [[nodiscard]] std::uint64_t group_features() const { return features / groups; }
  [[nodiscard]] std::uint32_t slice_of_group(std::uint32_t g) const {
    return static_cast<std::uint32_t>(std::uint64_t{g} * slices / groups);
  }
  // HeadParts: the group slice s works on, its part among the group's parts and the head
  // dimensions it holds (empty when the slice holds nothing).
  struct Part {
    std::uint32_t group = 0, part = 0, parts = 1;
    Span dims;
  };
  [[nodiscard]] Part part_of(std::uint32_t s) const;
  [[nodiscard]] std::uint32_t parts_of_group(std::uint32_t g) const;
  // The contiguous feature ranges of slice s, in storage order.
  [[nodiscard]] std::vector<Span> runs(std::uint32_t s) const;
  [[nodiscard]] std::uint64_t count(std::uint32_t s) const;
  [[nodiscard]] std::uint64_t max_count() const;
  // Whether the features run in order down the column (slice by slice, each slice's runs
  // ascending, with no gap): a chain over them in storage order follows feature order.
  [[nodiscard]] bool in_order() const;
  // The slice holding feature f, and f's position in that slice's storage.
  [[nodiscard]] std::uint32_t owner(std::uint64_t f) const;
  [[nodiscard]] std::uint64_t position(std::uint64_t f) const;
  friend bool operator==(const FeatureMap& a, const FeatureMap& b) {
    return a.kind == b.kind && a.features == b.features && a.slices == b.slices && a.groups == b.groups &&
           a.head_dim == b.head_dim;
  }
  friend bool operator!=(const FeatureMap& a, const FeatureMap& b) { return !(a == b); }
};

}  // namespace wafersim::models::compiler

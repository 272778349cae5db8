#pragma once
// Comparing a result with its reference: bit for bit, or within an allowed error per element,
// reporting the worst element with its index, both values and its ulp and relative errors.

#include <cstdint>
#include <string>
#include <vector>

#include "models/reference/tensor.h"

namespace wafersim::models::reference {

struct Comparison {
  std::size_t elements = 0;
  std::size_t failures = 0;   // elements that differ (exact) or exceed their allowance
  std::size_t differing = 0;  // elements whose bits differ
  // The worst element: the largest ulp distance (exact) or the largest error / allowance.
  std::size_t worst = 0;
  std::string worst_index;  // "[b, s, f]"
  double expected = 0, actual = 0;
  double ulps = 0;      // representable numbers between the two (ordinal distance)
  double relative = 0;  // |actual - expected| / |expected| (inf when expected is 0 and they differ)
  double allowed = 0;   // the worst element's allowance (0 for an exact comparison)
  Format format = Format::FP32;

  [[nodiscard]] bool ok() const { return failures == 0; }
  // "exact: 3 of 64 elements differ; worst [0, 1, 5]: expected 0.25 got 0.25012 (1 ulp, rel 4.9e-4)"
  [[nodiscard]] std::string describe() const;
};

// Bit-exact comparison (NaNs equal only with equal bits). Throws std::invalid_argument when the
// formats or shapes differ.
Comparison compare_exact(const Tensor& expected, const Tensor& actual);
// |actual - expected| <= allowed[i] per element (a NaN passes only against a NaN).
Comparison compare_within(const Tensor& expected, const Tensor& actual, const std::vector<double>& allowed);
// |actual - expected| <= absolute + relative |expected|.
Comparison compare_within(const Tensor& expected, const Tensor& actual, double absolute, double relative);

}  // namespace wafersim::models::reference

#include "models/reference/compare.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace wafersim::models::reference {
namespace {

void check_alike(const Tensor& e, const Tensor& a) {
  if (e.format() != a.format() || !(e.shape() == a.shape()))
    throw std::invalid_argument(fmt::format("reference: cannot compare a {} {} tensor with a {} {} tensor",
                                            to_string(e.format()), to_string(e.shape()), to_string(a.format()),
                                            to_string(a.shape())));
}

double ulp_distance(Format f, Bits a, Bits b) {
  return std::fabs(static_cast<double>(ordinal(f, a)) - static_cast<double>(ordinal(f, b)));
}

void record(Comparison& c, const Tensor& e, const Tensor& a, std::size_t i, double allowed) {
  c.worst = i;
  c.worst_index = e.index_name(i);
  c.expected = e.value(i);
  c.actual = a.value(i);
  c.ulps = ulp_distance(e.format(), e.bits(i), a.bits(i));
  const double diff = std::fabs(c.actual - c.expected);
  c.relative =
      c.expected != 0 ? diff / std::fabs(c.expected) : (diff == 0 ? 0 : std::numeric_limits<double>::infinity());
  c.allowed = allowed;
}

// exact: every differing element fails and the worst is the largest ulp distance; otherwise
// an element fails when its error exceeds its allowance and the worst has the largest ratio.
template <typename Allowed>
Comparison compare_with(const Tensor& expected, const Tensor& actual, bool exact, Allowed allowed_of) {
  check_alike(expected, actual);
  Comparison c;
  c.elements = expected.size();
  c.format = expected.format();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double worst_score = -1;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (expected.bits(i) == actual.bits(i)) continue;
    ++c.differing;
    const double e = expected.value(i), a = actual.value(i);
    const double allowed = exact ? 0.0 : allowed_of(i, e);
    double score;
    bool fails;
    if (std::isnan(e) || std::isnan(a)) {
      fails = exact || !(std::isnan(e) && std::isnan(a));
      score = fails ? kInf : 0;
    } else if (exact) {
      fails = true;
      score = ulp_distance(c.format, expected.bits(i), actual.bits(i));
    } else {
      const double diff = std::fabs(a - e);
      fails = diff > allowed;
      score = diff == 0 ? 0 : (allowed > 0 ? diff / allowed : kInf);
    }
    if (fails) ++c.failures;
    if (score > worst_score) {
      worst_score = score;
      record(c, expected, actual, i, allowed);
    }
  }
  return c;
}

}  // namespace

std::string Comparison::describe() const {
  std::string head = fmt::format("{} of {} {} elements differ, {} beyond the allowance", differing, elements,
                                 to_string(format), failures);
  if (differing == 0) return head;
  return fmt::format("{}; worst {}: expected {:.9g} got {:.9g} ({} ulp, relative {:.3g}, allowed {:.3g})", head,
                     worst_index, expected, actual, ulps, relative, allowed);
}

Comparison compare_exact(const Tensor& expected, const Tensor& actual) {
  return compare_with(expected, actual, true, [](std::size_t, double) { return 0.0; });
}

Comparison compare_within(const Tensor& expected, const Tensor& actual, const std::vector<double>& allowed) {
  if (allowed.size() != expected.size())
    throw std::invalid_argument(
        fmt::format("reference: {} allowances for {} elements", allowed.size(), expected.size()));
  return compare_with(expected, actual, false, [&](std::size_t i, double) { return allowed[i]; });
}

Comparison compare_within(const Tensor& expected, const Tensor& actual, double absolute, double relative) {
  return compare_with(expected, actual, false,
                      [&](std::size_t, double e) { return absolute + relative * std::fabs(e); });
}

}  // namespace wafersim::models::reference

#pragma once
// Expands a sweep specification into its points: the grid product, the zip, or random or
// Latin-hypercube samples of the parameters, less the combinations a constraint rejects.

#include <cstddef>
#include <string>
#include <vector>

#include "sim/app/sweep/spec.h"

namespace wafersim::app::sweep {

// One combination of parameter values.
struct Point {
  std::size_t index = 0;      // position among the points kept (the --point number)
  std::size_t candidate = 0;  // position among all combinations, before constraints
  std::vector<Value> values;  // one per parameter, in the order of the specification
};

struct Expansion {
  std::vector<Point> points;
  std::size_t candidates = 0;
  std::size_t skipped = 0;  // combinations a constraint rejected
};

// Contract: deterministic in the specification alone (sampling draws from sample_seed
// with a generator fixed by definition). Grid: the first parameter varies slowest. Zip: the
// i-th values together. Random: each parameter drawn independently, `samples` times.
// Latin hypercube: each parameter's range cut into `samples` equal strata, each stratum
// used exactly once, strata paired at random across parameters. Throws ConfigError when a
// constraint cannot be evaluated or the grid has more than kMaxCandidates combinations.
Expansion expand(const Spec& spec);

// Combinations expanded before the constraints, and points kept after them: each point is
// checked (its platform resolved, its command line parsed: about 0.3 ms) and planned (about
// 1.4 KB) before the sweep starts, so a sweep beyond these is refused up front.
inline constexpr std::size_t kMaxCandidates = 1'000'000;
inline constexpr std::size_t kMaxPoints = 100'000;

// What `name` (as written in a constraint, normalised) means at `point`.
Scalar lookup(const Spec& spec, const Point& point, const std::string& name);

}  // namespace wafersim::app::sweep

#include "sim/app/sweep/expand.h"

#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "sim/app/sweep/random.h"
#include "sim/config/diagnostics.h"

namespace wafersim::app::sweep {
using sim::config::ConfigError;
using sim::config::Diagnostic;

namespace {

// The value of a sampled parameter at fraction u in [0, 1).
Value sample(const Parameter& p, double u) {
  if (p.range) return p.range->at(u);
  auto i = static_cast<std::size_t>(u * static_cast<double>(p.values.size()));
  return p.values[std::min(i, p.values.size() - 1)];
}

std::vector<std::vector<Value>> combinations(const Spec& spec) {
  std::vector<std::vector<Value>> out;
  const auto& ps = spec.parameters;
  switch (spec.combine) {
    case Combine::Grid: {
      std::size_t total = 1;
      for (const auto& p : ps) {
        if (p.values.empty()) return out;
        if (total > kMaxCandidates / p.values.size())
          throw ConfigError(Diagnostic{p.location, "sweep.parameters",
                                       fmt::format("the grid has more than {} combinations", kMaxCandidates)});
        total *= p.values.size();
      }
      std::vector<std::size_t> at(ps.size(), 0);
      for (std::size_t n = 0; n < total; ++n) {
        std::vector<Value> v;
        for (std::size_t i = 0; i < ps.size(); ++i) v.push_back(ps[i].values[at[i]]);
        out.push_back(std::move(v));
        for (std::size_t i = ps.size(); i-- > 0;) {
          if (++at[i] < ps[i].values.size()) break;
          at[i] = 0;
        }
      }
      break;
    }
    case Combine::Zip: {
      std::size_t n = ps.empty() ? 0 : ps[0].values.size();
      for (std::size_t k = 0; k < n; ++k) {
        std::vector<Value> v;
        for (const auto& p : ps) v.push_back(p.values[k]);
        out.push_back(std::move(v));
      }
      break;
    }
    case Combine::Random: {
      Random rng(spec.sample_seed);
      for (std::uint64_t k = 0; k < spec.samples; ++k) {
        std::vector<Value> v;
        for (const auto& p : ps) v.push_back(sample(p, rng.uniform()));
        out.push_back(std::move(v));
      }
      break;
    }
    case Combine::LatinHypercube: {
      Random rng(spec.sample_seed);
      const std::size_t n = spec.samples;
      out.assign(n, {});
      for (const auto& p : ps) {
        std::vector<std::size_t> strata(n);
        std::iota(strata.begin(), strata.end(), 0);
        for (std::size_t i = n; i > 1; --i) std::swap(strata[i - 1], strata[rng.below(i)]);
        for (std::size_t k = 0; k < n; ++k) {
          double u = (static_cast<double>(strata[k]) + rng.uniform()) / static_cast<double>(n);
          out[k].push_back(sample(p, u));
        }
      }
      break;
    }
  }
  return out;
}

}  // namespace

Scalar lookup(const Spec& spec, const Point& point, const std::string& name) {
  for (std::size_t i = 0; i < spec.parameters.size(); ++i)
    if (Expression::normalise(spec.parameters[i].key) == name) {
      const Value& v = point.values[i];
      return interpret(spec.parameters[i].argument(v), v.quoted);
    }
  for (const auto& [k, v] : spec.set)
    if (k == name) return interpret(v.text, v.quoted);
  for (const auto& [k, v] : spec.options)
    if (Expression::normalise("workload." + k) == name) return interpret(v.text, v.quoted);
  if (name == "workload.seed") return interpret(spec.seed.text, spec.seed.quoted);
  Diagnostic d;
  d.location.file = spec.file;
  d.message = fmt::format("'{}' is not a parameter of this sweep", name);
  throw ConfigError(std::move(d));
}

Expansion expand(const Spec& spec) {
  Expansion e;
  auto all = combinations(spec);
  e.candidates = all.size();
  for (std::size_t c = 0; c < all.size(); ++c) {
    Point p;
    p.candidate = c;
    p.values = std::move(all[c]);
    bool keep = true;
    for (const auto& con : spec.constraints) {
      if (!con.expression.evaluate([&](const std::string& name) { return lookup(spec, p, name); })) {
        keep = false;
        break;
      }
    }
    if (!keep) {
      ++e.skipped;
      continue;
    }
    p.index = e.points.size();
    e.points.push_back(std::move(p));
  }
  return e;
}

}  // namespace wafersim::app::sweep

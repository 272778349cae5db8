#include "fabric/defects/yield.h"

#include <algorithm>
#include <cmath>

#include "fabric/defects/defect_map.h"
#include "fabric/defects/remap_summary.h"

namespace wafersim::fabric::defects {
namespace {

// log P(Binomial(n, p) <= k), summed term by term in the log domain.
double log_at_most(std::uint32_t n, std::uint32_t k, double p) {
  if (p <= 0) return 0;
  if (p >= 1) return k >= n ? 0 : -INFINITY;
  const double lp = std::log(p), lq = std::log1p(-p);
  double total = 0, best = -INFINITY;
  std::vector<double> terms;
  for (std::uint32_t i = 0; i <= std::min(k, n); ++i) {
    const double t = std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) + i * lp + (n - i) * lq;
    terms.push_back(t);
    best = std::max(best, t);
  }
  for (double t : terms) total += std::exp(t - best);
  return std::min(0.0, best + std::log(total));
}

}  // namespace

double independent_yield(const PhysicalArray& array, double p) {
  double log_line = 0;
  for (std::uint32_t g = 0; g < array.groups(); ++g)
    log_line += log_at_most(array.group_size(g) + array.spares(), array.spares(), p);
  return std::exp(log_line * array.lines());
}

YieldPoint yield_point(const PhysicalArray& array, const RedundancyConfig& redundancy, double density_per_mm2,
                       double core_area_mm2, std::uint32_t trials, std::uint64_t seed) {
  YieldPoint y;
  y.density_per_mm2 = density_per_mm2;
  y.core_area_mm2 = core_area_mm2;
  y.width = array.logical_width();
  y.height = array.logical_height();
  y.physical_cores = array.cores();
  y.logical_cores = array.logical_cores();
  y.trials = trials;
  const double p = -std::expm1(-density_per_mm2 * core_area_mm2);
  y.independent_yield = independent_yield(array, p);
  double dead = 0, stretch = 0, share = 0;
  for (std::uint32_t t = 0; t < trials; ++t) {
    const RemapSummary s = summarize(DefectMap::sample(array, p, seed, t), redundancy);
    dead += static_cast<double>(s.dead);
    if (!s.ok) continue;
    ++y.good;
    stretch += s.mean_stretch();
    share += s.links ? static_cast<double>(s.detour_links) / static_cast<double>(s.links) : 0.0;
    y.worst_stretch = std::max(y.worst_stretch, s.worst_stretch());
  }
  if (trials) y.mean_dead = dead / trials;
  if (y.good) {
    y.mean_stretch = stretch / y.good;
    y.detour_share = share / y.good;
  }
  return y;
}

PhysicalArray scaled_array(const PhysicalArray& array, const RedundancyConfig& redundancy, double base_area_mm2,
                           double area_mm2) {
  const double s = std::sqrt(base_area_mm2 / area_mm2);
  auto side = [s](std::uint32_t n) {
    return static_cast<std::uint32_t>(std::clamp(std::llround(n * s), 1LL, 65535LL));
  };
  return PhysicalArray(side(array.logical_width()), side(array.logical_height()), redundancy);
}

YieldStudy yield_study(const PhysicalArray& array, const RedundancyConfig& redundancy, const YieldOptions& o) {
  YieldStudy st;
  st.point = yield_point(array, redundancy, o.density_per_mm2, o.core_area_mm2, o.trials, o.seed);
  for (double f : o.density_factors) st.densities.push_back(o.density_per_mm2 * f);
  for (double f : o.area_factors) st.areas.push_back(o.core_area_mm2 * f);
  for (double a : st.areas) {
    const PhysicalArray scaled = scaled_array(array, redundancy, o.core_area_mm2, a);
    for (double d : st.densities) st.curve.push_back(yield_point(scaled, redundancy, d, a, o.trials, o.seed));
  }
  return st;
}

nlohmann::ordered_json to_json(const YieldPoint& p) {
  nlohmann::ordered_json j;
  j["density_per_mm2"] = p.density_per_mm2;
  j["core_area_mm2"] = p.core_area_mm2;
  j["width"] = p.width;
  j["height"] = p.height;
  j["physical_cores"] = p.physical_cores;
  j["logical_cores"] = p.logical_cores;
  j["active_share"] = p.active_share();
  j["trials"] = p.trials;
  j["good"] = p.good;
  j["yield"] = p.yield();
  j["independent_yield"] = p.independent_yield;
  j["mean_dead"] = p.mean_dead;
  j["mean_stretch"] = p.mean_stretch;
  j["worst_stretch"] = p.worst_stretch;
  j["detour_share"] = p.detour_share;
  return j;
}

nlohmann::ordered_json to_json(const YieldStudy& s) {
  nlohmann::ordered_json j;
  j["point"] = to_json(s.point);
  j["densities"] = s.densities;
  j["areas"] = s.areas;
  auto curve = nlohmann::ordered_json::array();
  for (const auto& p : s.curve) curve.push_back(to_json(p));
  j["curve"] = curve;
  return j;
}

}  // namespace wafersim::fabric::defects

#include "sim/app/traffic_summary.h"

#include <fmt/format.h>

namespace wafersim::app {

nlohmann::ordered_json traffic_summary_json(const fabric::traffic::TrafficResult& r,
                                            const sim::stats::Histogram& latencies, const std::string& pattern,
                                            double bound) {
  nlohmann::ordered_json j;
  j["format"] = "wafersim-traffic/1";
  j["pattern"] = pattern;
  j["rate"] = r.rate;
  j["offered"] = r.offered;
  j["accepted"] = r.accepted;
  j["bound"] = bound > 0 ? nlohmann::ordered_json(bound) : nlohmann::ordered_json();
  j["drained"] = r.drained;
  j["undelivered"] = r.undelivered;
  j["packets"] = r.packets;
  j["cycles"] = r.cycles;
  nlohmann::ordered_json cdf = nlohmann::ordered_json::array();
  for (int pct = 1; pct <= 100 && latencies.samples() > 0; ++pct) {
    const std::uint64_t at = latencies.quantile(pct / 100.0);
    if (!cdf.empty() && cdf.back()[0].get<std::uint64_t>() == at)
      cdf.back()[1] = pct / 100.0;
    else
      cdf.push_back({at, pct / 100.0});
  }
  j["latency"] = {{"avg", r.latency_avg}, {"min", r.latency_min}, {"p50", r.latency_p50},
                  {"p99", r.latency_p99}, {"max", r.latency_max}, {"cdf", std::move(cdf)}};
  return j;
}

std::string traffic_status(const fabric::traffic::TrafficResult& r) {
  if (r.drained) return "ok";
  return fmt::format("saturated: {} measured packets undelivered at the drain limit", r.undelivered);
}

}  // namespace wafersim::app

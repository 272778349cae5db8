#pragma once
// traffic.json, the headline of a synthetic-traffic run for people and for the report:
// offered and accepted load, the throughput bound, whether the measured packets drained, and
// the latency distribution as a CDF.

#include <nlohmann/json.hpp>

#include <string>

#include "fabric/traffic/measurement.h"

namespace wafersim::app {

// {"format": "wafersim-traffic/1", pattern, rate, offered, accepted, bound (null without
// one), drained, undelivered, packets, cycles, latency: {avg, min, p50, p99, max,
// cdf: [[cycles, fraction of measured packets at or below], ...]}}. The CDF has a point per
// percentile, merged where the latency repeats (at most 100 points).
nlohmann::ordered_json traffic_summary_json(const fabric::traffic::TrafficResult& r,
                                            const sim::stats::Histogram& latencies, const std::string& pattern,
                                            double bound);

// run.json's status of a traffic run: "ok" when every measured packet was delivered,
// "saturated: N measured packets undelivered at the drain limit" otherwise.
std::string traffic_status(const fabric::traffic::TrafficResult& r);

}  // namespace wafersim::app

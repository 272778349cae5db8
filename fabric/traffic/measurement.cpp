#include "fabric/traffic/measurement.h"

namespace wafersim::fabric::traffic {

double Measurement::offered() const {
  const double window = static_cast<double>(end_ - start_);
  return sources_ ? static_cast<double>(created_) / (sources_ * window) : 0.0;
}

double Measurement::accepted() const {
  const double window = static_cast<double>(end_ - start_);
  return static_cast<double>(ejected_) / (routers_ * window);
}

void Measurement::fill(TrafficResult& r) const {
  r.offered = offered();
  r.accepted = accepted();
  r.latency_avg = latency_.mean();
  r.latency_min = latency_.min();
  r.latency_p50 = latency_.quantile(0.5);
  r.latency_p99 = latency_.quantile(0.99);
  r.latency_max = latency_.max();
  r.packets = latency_.samples();
}

}  // namespace wafersim::fabric::traffic

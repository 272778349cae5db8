#pragma once
// EdgeMessages and compute intervals as bytes, for a wafer in another rank than the cluster
// (platforms/cluster.h): every field, the chunks' FP32 values bit for bit.

#include <vector>

#include "platforms/edge/edge_endpoint.h"
#include "platforms/edge/edge_message.h"
#include "sim/parallel/wire.h"

namespace wafersim::platforms::edge {

void put_messages(sim::parallel::Writer& w, const EdgeMessages& messages);
EdgeMessages get_messages(sim::parallel::Reader& r);
void put_intervals(sim::parallel::Writer& w, const std::vector<Interval>& intervals);
std::vector<Interval> get_intervals(sim::parallel::Reader& r);

}  // namespace wafersim::platforms::edge

#pragma once
// Every field of two synthetic-traffic results equal: for runs that must not be told apart
// (same seed, idle skipping on and off, packets with and without records, either sweep).

#include <gtest/gtest.h>

#include "fabric/traffic/measurement.h"

namespace wafersim::test {

inline void expect_same_result(const fabric::traffic::TrafficResult& a, const fabric::traffic::TrafficResult& b) {
  EXPECT_EQ(a.offered, b.offered);
  EXPECT_EQ(a.accepted, b.accepted);
  EXPECT_EQ(a.latency_avg, b.latency_avg);
  EXPECT_EQ(a.latency_min, b.latency_min);
  EXPECT_EQ(a.latency_p50, b.latency_p50);
  EXPECT_EQ(a.latency_p99, b.latency_p99);
  EXPECT_EQ(a.latency_max, b.latency_max);
  EXPECT_EQ(a.packets, b.packets);
  EXPECT_EQ(a.cycles, b.cycles);
  EXPECT_EQ(a.drained, b.drained);
  EXPECT_EQ(a.undelivered, b.undelivered);
}

}  // namespace wafersim::test

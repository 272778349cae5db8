#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "sim/stats/formatters.h"
#include "sim/stats/recorded.h"
#include "sim/stats/stats.h"

namespace wafersim::sim::stats::stats_test {
namespace {

TEST(Stats, TreeReadsCountersAtDumpTime) {
  Group root("");
  std::uint64_t forwarded = 0;
  auto& g = root.group("cluster").group("wafer0");
  g.counter("forwarded", &forwarded, "wavelets", "wavelets forwarded");
  g.formula(
      "rate", [&] { return forwarded / 4.0; }, "wavelets/cycle", "forwarded per cycle");
  forwarded = 10;
  auto j = to_json(root);
  EXPECT_EQ(j["cluster"]["wafer0"]["forwarded"], 10);
  EXPECT_DOUBLE_EQ(j["cluster"]["wafer0"]["rate"].get<double>(), 2.5);
  auto d = describe_json(root);
  EXPECT_EQ(d["cluster.wafer0.forwarded"]["unit"], "wavelets");
  EXPECT_EQ(d["cluster.wafer0.forwarded"]["description"], "wavelets forwarded");
  ASSERT_NE(root.find("cluster.wafer0.forwarded"), nullptr);
  EXPECT_EQ(root.find("cluster.wafer0.forwarded")->value(), 10);
  EXPECT_EQ(root.find("cluster.nope.forwarded"), nullptr);
  EXPECT_EQ(g.path(), "cluster.wafer0");
}

// A tree recorded in its own order and added elsewhere lists its statistics as the original
// does (stats.txt of a run over MPI ranks); groups made before it can be moved after it.
TEST(Stats, OrderedRecordKeepsTheTreesOrder) {
  Group original("");
  auto& w = original.group("wafer1");
  w.formula(
      "zeta", [] { return 1; }, "u", "first", true);
  w.formula(
      "alpha", [] { return 2; }, "u", "second", true);
  w.group("fabric").formula(
      "z", [] { return 3; }, "u", "z", true);
  w.group("cores").formula(
      "a", [] { return 4; }, "u", "a", true);
  Group copy("");
  copy.group("wafer1").group("links").formula(
      "x", [] { return 5; }, "u", "x", true);
  add_recorded(copy, to_ordered_json(original), describe_json(original), "");
  copy.group("wafer1").move_first_groups_last(1);
  std::ostringstream text;
  write_text(text, copy);
  const std::string t = text.str();
  EXPECT_LT(t.find("wafer1.zeta"), t.find("wafer1.alpha"));
  EXPECT_LT(t.find("wafer1.fabric.z"), t.find("wafer1.cores.a"));
  EXPECT_LT(t.find("wafer1.cores.a"), t.find("wafer1.links.x"));
  EXPECT_NE(t.find("# first (u)"), std::string::npos);
  // The unordered form sorts the names.
  Group sorted("");
  add_recorded(sorted, to_json(original), describe_json(original), "");
  std::ostringstream text2;
  write_text(text2, sorted);
  EXPECT_GT(text2.str().find("wafer1.zeta"), text2.str().find("wafer1.alpha"));
}

TEST(Stats, DuplicateNamesAreRejected) {
  Group root("");
  std::uint64_t a = 0;
  root.counter("a", &a, "1", "a");
  EXPECT_THROW(root.counter("a", &a, "1", "again"), std::logic_error);
}

TEST(Stats, VectorsAndDistributions) {
  Group root("");
  std::vector<std::uint64_t> per{1, 2, 3};
  root.vector(
      "per_router", [&] { return per.size(); }, [&](std::size_t i) { return static_cast<double>(per[i]); }, "wavelets",
      "per router");
  Histogram h(1, 16);
  for (std::uint64_t v : {1, 2, 2, 3, 10, 40}) h.add(v);
  root.distribution("latency", &h, "cycles", "latency");
  auto j = to_json(root);
  EXPECT_EQ(j["per_router"], nlohmann::json({1, 2, 3}));
  EXPECT_EQ(j["latency"]["samples"], 6);
  EXPECT_EQ(j["latency"]["p50"], 2);
  EXPECT_EQ(j["latency"]["max"], 40);
  EXPECT_EQ(h.quantile(0.99), 40u);  // overflowed sample: reported as the max
  EXPECT_EQ(h.quantile(5.0 / 6.0), 10u);
  std::ostringstream text;
  write_text(text, root);
  EXPECT_NE(text.str().find("per_router"), std::string::npos);
  EXPECT_NE(text.str().find("sum 6"), std::string::npos);
}

TEST(Stats, FileIsDeterministic) {
  auto make = [] {
    auto root = std::make_unique<Group>("");
    static std::uint64_t x = 5;
    root->group("b").counter("x", &x, "1", "x");
    root->group("a").counter("x", &x, "1", "x");
    return stats_file_json(*root);
  };
  EXPECT_EQ(make(), make());
}

}  // namespace
}  // namespace wafersim::sim::stats::stats_test

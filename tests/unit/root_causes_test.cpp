// The report's root causes of credit stalls: chains of stalled outputs followed downstream to
// the full sink behind them (an ejection, a link, the edge), on hand-made totals and on a
// hotspot run, whose cause is the hot router's ejection.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "sim/app/report/root_causes.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::app::report::root_causes_test {
namespace {
using test::slurp;
using test::wafersim;

constexpr std::uint32_t kN = 0, kE = 1, kS = 2, kRamp = 4;

OutputTotals grid(std::uint32_t cols, std::uint32_t rows) {
  OutputTotals t;
  t.cols = cols;
  t.rows = rows;
  t.cycles = 100;
  t.forwarded.assign(cols * rows, std::vector<std::uint64_t>(5, 0));
  t.stalled = t.forwarded;
  t.links.assign(cols * rows, std::vector<std::uint64_t>(5, 1));
  return t;
}

TEST(RootCauses, AChainEastEndsAtTheFullEjection) {
  auto t = grid(3, 1);
  t.stalled[0][kE] = 100;
  t.stalled[1][kE] = 80;
  t.forwarded[2][kRamp] = 100;  // the sink: full, not stalled
  const auto c = root_causes(t, 10);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]["kind"], "ejection");
  EXPECT_EQ(c[0]["x0"], 2);
  EXPECT_EQ(c[0]["dir"], kRamp);
  EXPECT_EQ(c[0]["utilization"], 1.0);
  EXPECT_EQ(c[0]["stalled"], 180);
  EXPECT_EQ(c[0]["share"], 1.0);
  ASSERT_EQ(c[0]["outputs"].size(), 2u);
  EXPECT_EQ(c[0]["outputs"][0]["x0"], 0);
  EXPECT_EQ(c[0]["outputs"][0]["hops"], 1);
  EXPECT_EQ(c[0]["outputs"][1]["x0"], 1);
  EXPECT_EQ(c[0]["outputs"][1]["hops"], 0);
}

TEST(RootCauses, AFullLinkAndTheEdgeAreCausesToo) {
  auto t = grid(2, 2);
  t.stalled[0][kE] = 50;  // (0,0) east into (1,0), whose south link is full
  t.forwarded[1][kS] = 90;
  t.stalled[2][kN] = 7;   // (0,1) north into (0,0), which goes on stalling east
  t.stalled[3][kS] = 20;  // (1,1) south: off the wafer
  const auto c = root_causes(t, 10);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0]["kind"], "link");
  EXPECT_EQ(c[0]["x0"], 1);
  EXPECT_EQ(c[0]["y0"], 0);
  EXPECT_EQ(c[0]["dir"], kS);
  EXPECT_EQ(c[0]["utilization"], 0.9);
  EXPECT_EQ(c[0]["stalled"], 57);
  ASSERT_EQ(c[0]["outputs"].size(), 2u);
  EXPECT_EQ(c[0]["outputs"][1],
            nlohmann::ordered_json::parse(R"({"x0": 0, "y0": 1, "dir": 0, "stalled": 7, "hops": 1})"));
  EXPECT_EQ(c[1]["kind"], "edge");
  EXPECT_EQ(c[1]["x0"], 1);
  EXPECT_EQ(c[1]["y0"], 1);
  EXPECT_EQ(c[1]["stalled"], 20);
  EXPECT_EQ(root_causes(t, 1).size(), 1u);
}

TEST(RootCauses, AHotspotRunNamesTheHotEjection) {
  test::TempDir tmp;
  const auto run = tmp.path() / "hot";
  ASSERT_EQ(wafersim("traffic tiny --pattern hotspot --hotspot 5,2 --hotspot-fraction 0.5 --rate 0.3 --warmup 100 "
                     "--measure 400 --drain 600 --trace windows -o " +
                     run.string())
                .code,
            0);
  ASSERT_EQ(wafersim("report " + run.string()).code, 0);
  const std::string html = slurp(run / "report.html");
  const std::string open = "<script type=\"application/json\" id=\"report-data\">";
  const auto from = html.find(open) + open.size();
  const auto data = nlohmann::json::parse(html.substr(from, html.find("</script>", from) - from));
  const auto& causes = data["fabric"][0]["root_causes"];
  ASSERT_FALSE(causes.empty());
  EXPECT_EQ(causes[0]["kind"], "ejection");
  EXPECT_EQ(causes[0]["x0"], 5);
  EXPECT_EQ(causes[0]["y0"], 2);
  EXPECT_GT(causes[0]["share"].get<double>(), 0.5);
  EXPECT_GT(causes[0]["utilization"].get<double>(), 0.9);
}

}  // namespace
}  // namespace wafersim::app::report::root_causes_test

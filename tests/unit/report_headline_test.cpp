// What a report says first: a traffic run's offered and accepted load, whether its measured
// packets drained (also run.json's status) and its latency CDF (traffic.json); a model run's
// phases with their bound, FLOP/s, share of peak and stall mix.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::report_headline_test {
namespace {
using test::slurp;
using test::wafersim;
namespace fs = std::filesystem;

// The data the report page embeds.
nlohmann::json report_data(const fs::path& run) {
  const auto r = wafersim("report " + run.string());
  EXPECT_EQ(r.code, 0) << r.out;
  const std::string html = slurp(run / "report.html");
  const std::string open = "<script type=\"application/json\" id=\"report-data\">";
  const auto from = html.find(open) + open.size();
  return nlohmann::json::parse(html.substr(from, html.find("</script>", from) - from));
}

TEST(ReportHeadline, SaturatedTrafficSaysSoWithItsLatencyCdf) {
  test::TempDir tmp;
  const fs::path run = tmp.path() / "hot";
  ASSERT_EQ(wafersim("traffic tiny --pattern hotspot --hotspot 5,2 --rate 0.3 --warmup 100 --measure 400 --drain 600 "
                     "--trace windows --json -o " +
                     run.string())
                .code,
            0);
  const auto traffic = nlohmann::json::parse(slurp(run / "traffic.json"));
  EXPECT_EQ(traffic["format"], "wafersim-traffic/1");
  EXPECT_EQ(traffic["drained"], false);
  ASSERT_GT(traffic["undelivered"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(nlohmann::json::parse(slurp(run / "run.json"))["status"],
            "saturated: " + std::to_string(traffic["undelivered"].get<std::uint64_t>()) +
                " measured packets undelivered at the drain limit");
  const auto& cdf = traffic["latency"]["cdf"];
  ASSERT_GE(cdf.size(), 2u);
  EXPECT_EQ(cdf.back()[0], traffic["latency"]["max"]);
  EXPECT_EQ(cdf.back()[1], 1.0);
  for (std::size_t i = 1; i < cdf.size(); ++i) {
    EXPECT_GT(cdf[i][0].get<std::uint64_t>(), cdf[i - 1][0].get<std::uint64_t>());
    EXPECT_GT(cdf[i][1].get<double>(), cdf[i - 1][1].get<double>());
  }
  const auto data = report_data(run);
  EXPECT_EQ(data["traffic"], traffic);
  EXPECT_EQ(data["run"]["status"], nlohmann::json::parse(slurp(run / "run.json"))["status"]);
}

TEST(ReportHeadline, DrainedTrafficIsOk) {
  test::TempDir tmp;
  const fs::path run = tmp.path() / "low";
  const auto r = wafersim("traffic tiny --pattern uniform --rate 0.05 --measure 500 --json -o " + run.string());
  ASSERT_EQ(r.code, 0);
  const auto traffic = nlohmann::json::parse(slurp(run / "traffic.json"));
  const auto summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(traffic["drained"], true);
  EXPECT_EQ(traffic["offered"], summary["offered"]);
  EXPECT_EQ(traffic["accepted"], summary["accepted"]);
  EXPECT_EQ(traffic["bound"], summary["bound"]);
  EXPECT_EQ(traffic["latency"]["p99"], summary["latency_p99"]);
  EXPECT_EQ(nlohmann::json::parse(slurp(run / "run.json"))["status"], "ok");
}

TEST(ReportHeadline, ModelPhasesCarryBoundFlopsPeakAndStalls) {
  test::TempDir tmp;
  const fs::path run = tmp.path() / "m";
  ASSERT_EQ(wafersim("run tiny --model tiny-mlp --trace windows -o " + run.string()).code, 0);
  const auto model = nlohmann::json::parse(slurp(run / "model.json"));
  const auto data = report_data(run);
  const auto& rows = data["phases"]["rows"];
  ASSERT_EQ(rows.size(), model["results"].size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& m = model["results"][i];
    EXPECT_EQ(rows[i]["name"], m["layer"].get<std::string>() + " " + m["phase"].get<std::string>());
    EXPECT_EQ(rows[i]["bound_cycles"], m["bound_cycles"]);
    EXPECT_EQ(rows[i]["binds"], m["binds"]);
    EXPECT_EQ(rows[i]["flops_per_second"], m["flops_per_second"]);
    EXPECT_EQ(rows[i]["peak_fraction"], m["peak_fraction"]);
    EXPECT_EQ(rows[i]["stalls"], m["stalls"]);
  }
  EXPECT_EQ(data["steps"]["present"], false);
  EXPECT_NE(data["steps"]["reason"].get<std::string>().find("one step of a compiled model"), std::string::npos);
}

}  // namespace
}  // namespace wafersim::report_headline_test

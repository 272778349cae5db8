// `wafersim report`: the data the page is drawn from (frames, hotspots, busiest links, totals),
// the page itself (self-contained, data safely inlined) and the errors for folders that are
// not traced runs. tests/scripts/report_browser_test.py renders the page in Chromium.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <regex>
#include <string>

#include "sim/app/report/report_data.h"
#include "sim/app/report/report_html.h"
#include "sim/errors.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::app::report::report_test {
namespace {

using test::slurp;

std::string traced_hotspot_run(const test::TempDir& tmp, const std::string& extra = "") {
  const std::string out = (tmp.path() / "run").string();
  const auto r = test::wafersim(
      "traffic tiny --pattern hotspot --hotspot 5,2 --hotspot-fraction 0.3 --rate 0.05 "
      "--warmup 200 --measure 2000 --seed 3 --trace windows --trace-window 23 --json -o " +
      out + " " + extra);
  EXPECT_EQ(r.code, 0) << r.out;
  return out;
}

std::string error_of(const std::filesystem::path& dir) {
  try {
    load_report_data(dir, ReportOptions{});
  } catch (const sim::InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Report, DataHasFramesHotspotsAndTheRunsTotals) {
  test::TempDir tmp;
  const std::string run = traced_hotspot_run(tmp);
  const auto d = load_report_data(run, ReportOptions{40, 5});
  ASSERT_EQ(d["fabric"].size(), 1u);
  const auto& f = d["fabric"][0];
  EXPECT_EQ(f["cols"], 8);
  EXPECT_EQ(f["rows"], 8);
  const std::uint64_t windows = d["trace"]["windows"];
  const std::uint64_t per_frame = (windows + 39) / 40;
  EXPECT_EQ(f["frames"].size(), (windows + per_frame - 1) / per_frame);
  EXPECT_LE(f["frames"].size(), 40u);
  // Frames partition the run and their sums are the totals, which are the statistics.
  std::uint64_t fwd = 0, start = 0;
  for (const auto& fr : f["frames"]) {
    EXPECT_EQ(fr["start"].get<std::uint64_t>(), start);
    start = fr["end"];
    for (const auto& dir : fr["fwd"])
      for (const auto& v : dir) fwd += v.get<std::uint64_t>();
  }
  EXPECT_EQ(start, d["trace"]["end_cycle"].get<std::uint64_t>());
  EXPECT_EQ(fwd, f["totals"]["forwarded"].get<std::uint64_t>());
  EXPECT_EQ(fwd, d["stats"]["wafer0"]["wavelets_forwarded"].get<std::uint64_t>());
  EXPECT_EQ(f["series"]["forwarded"].size(), windows);
  // Hotspots: sorted by stall cycles; the first feeds the hot router from the south.
  ASSERT_EQ(f["hotspots"].size(), 5u);
  EXPECT_EQ(f["hotspots"][0]["x0"], 5);
  EXPECT_EQ(f["hotspots"][0]["y0"], 3);
  EXPECT_EQ(f["hotspots"][0]["dir"], 0);
  for (std::size_t i = 1; i < 5; ++i)
    EXPECT_GE(f["hotspots"][i - 1]["stalled"].get<std::uint64_t>(), f["hotspots"][i]["stalled"].get<std::uint64_t>());
  double share = 0;
  for (const auto& h : f["hotspots"]) share += h["share"].get<double>();
  EXPECT_LE(share, 1.0 + 1e-12);
  // The busiest output is the hot router's ejection.
  EXPECT_EQ(f["busiest"][0]["x0"], 5);
  EXPECT_EQ(f["busiest"][0]["y0"], 2);
  EXPECT_EQ(f["busiest"][0]["dir"], 4);
  EXPECT_FALSE(d["links"]["present"].get<bool>());
  EXPECT_FALSE(d["steps"]["present"].get<bool>());
  EXPECT_FALSE(d["pe"]["recorded"].get<bool>());
  EXPECT_EQ(d["pe"]["reason"], "no PE ran a program in this run");
}

TEST(Report, PageIsSelfContainedAndInlinesDataSafely) {
  test::TempDir tmp;
  const std::string run = traced_hotspot_run(tmp);
  // A command line that tries to close the data's <script> element.
  auto meta = nlohmann::json::parse(slurp(std::filesystem::path(run) / "run.json"));
  meta["command_line"] = "wafersim </script><script>alert(1)</script> <!--";
  std::ofstream(std::filesystem::path(run) / "run.json") << meta.dump();
  const auto data = load_report_data(run, ReportOptions{});
  const std::string html = render_html(data);
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = 0; (at = html.find(what, at)) != std::string::npos; at += what.size()) ++n;
    return n;
  };
  EXPECT_EQ(count("</script>"), 2u);  // the data's and the program's elements only
  EXPECT_EQ(count("<!--"), 0u);
  EXPECT_NE(html.find("\\u003c/script>"), std::string::npos);
  // Nothing is fetched: no external URL in any src or href.
  EXPECT_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*["']?(https?:)?//)")));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // The inlined data parses back to what was loaded.
  const auto begin = html.find("id=\"report-data\">") + std::string("id=\"report-data\">").size();
  const auto end = html.find("</script>", begin);
  EXPECT_EQ(nlohmann::ordered_json::parse(html.substr(begin, end - begin)), data);
}

TEST(Report, FoldersThatAreNotTracedRunsAreInputErrors) {
  test::TempDir tmp;
  EXPECT_NE(error_of(tmp.path() / "missing").find("not a folder"), std::string::npos);
  EXPECT_NE(error_of(tmp.path()).find("run.json: error: cannot read the run's metadata"), std::string::npos);
  const auto plain = test::wafersim("run tiny --cycles 100 -o " + (tmp.path() / "plain").string());
  ASSERT_EQ(plain.code, 0);
  EXPECT_NE(error_of(tmp.path() / "plain").find("no trace in this run folder"), std::string::npos);
  const auto cli = test::wafersim("report " + (tmp.path() / "plain").string(), true);
  EXPECT_EQ(cli.code, 2);
  EXPECT_NE(cli.out.find("run the command again with --trace windows"), std::string::npos) << cli.out;
}

TEST(Report, DamagedTablesNameTheFileAndLine) {
  test::TempDir tmp;
  const std::string run = traced_hotspot_run(tmp);
  const auto csv = std::filesystem::path(run) / "trace/fabric-w0.csv";
  std::string text = slurp(csv);
  std::ofstream(csv) << text << "3,1,1,9,0,1,0,0\n";  // direction 9
  const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  EXPECT_EQ(error_of(run), csv.string() + ":" + std::to_string(lines) + ": window, region or direction out of range");
  std::ofstream(csv) << "window,x,y\n";
  EXPECT_NE(error_of(run).find(csv.string() + ":1: header 'window,x,y' does not match meta.json"), std::string::npos);
  std::ofstream(csv) << text.substr(0, text.find('\n') + 1) << "0,1,x\n";
  EXPECT_EQ(error_of(run), csv.string() + ":2: expected 8 unsigned integers");
}

}  // namespace
}  // namespace wafersim::app::report::report_test

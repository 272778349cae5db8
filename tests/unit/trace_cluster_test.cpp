// Tracing the weight-streaming loop: every chunk link's windows add up exactly to its byte
// counter and never exceed what the link can carry in a window; the timeline holds one slice
// per chunk per link and the MemoryX and step tracks; steps.json is the per-step breakdown.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "platforms/cluster.h"
#include "platforms/platform_spec.h"
#include "platforms/run_trace.h"
#include "platforms/step_timeline.h"
#include "sim/stats/formatters.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::trace_cluster_test {
namespace {

using test::slurp;

TEST(TraceCluster, LinkWindowsAddUpToEachLinksBytes) {
  test::TempDir tmp;
  const auto spec = platforms::load_platform("tiny-cluster").spec;
  sim::trace::TraceOptions opt;
  opt.windows = opt.timeline = true;
  opt.window_cycles = 3000;  // about 2.7 us: a 4 KiB chunk at 100 Gb/s (328 ns) spans window edges
  platforms::RunTrace trace(opt, tmp.path(), spec, 0);
  sim::stats::Group root("");
  platforms::edge::ModelEndpointConfig ec;
  ec.rates = platforms::edge::LayerRates{units::Bandwidth{200e9}, units::Bandwidth{100e9}};
  ec.loss_time = units::Duration{2e-6};
  ec.layers = 3;
  platforms::ClusterParts parts;
  parts.layers = {{"l0", 60000}, {"l1", 30000}, {"l2", 45000}};
  parts.stand_ins = platforms::model_endpoints(ec);
  platforms::Cluster cluster("cluster", spec, std::move(parts), root);
  trace.attach(cluster);
  const auto timeline = platforms::run_training_steps(cluster, 2);
  trace.record_steps(cluster, timeline);
  const double hz = spec.wafer.clock.hz;
  const auto end = static_cast<std::uint64_t>(std::ceil(sim::now().seconds() * hz - 1e-9));
  trace.finish(sim::Cycle(end));

  const auto meta = nlohmann::json::parse(slurp(tmp.path() / "trace/meta.json"));
  const auto& links = meta["links"];
  ASSERT_EQ(links.size(), 6u);  // 1 plane, 2 systems: MemoryX out and in, 2 leaves down, 2 wafers up
  std::map<std::uint64_t, std::uint64_t> sum;
  std::map<std::uint64_t, std::uint64_t> most;  // largest window per link
  std::ifstream in(tmp.path() / "trace/links.csv");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "window,link,bytes,busy_ps");
  const std::uint64_t windows = meta["windows"];
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::uint64_t w = 0, l = 0, b = 0, busy = 0;
    char c = 0;
    ss >> w >> c >> l >> c >> b >> c >> busy;
    EXPECT_LT(w, windows);
    sum[l] += b;
    most[l] = std::max(most[l], b);
    EXPECT_LE(busy, static_cast<std::uint64_t>(3000 / hz * 1e12) + 1);
  }
  const auto stats = sim::stats::to_json(root)["cluster"];
  EXPECT_EQ(links[0]["label"], "p0 MemoryX to SwarmX (weights)");
  EXPECT_EQ(sum[0], stats["memoryx"]["stream_out0"]["bytes"].get<std::uint64_t>());
  for (std::size_t i = 0; i < links.size(); ++i) {
    EXPECT_EQ(sum[i], links[i]["bytes"].get<std::uint64_t>()) << links[i]["label"];
    // 100 Gb/s for one window of 3000 cycles at 1.1 GHz, plus a byte of rounding.
    EXPECT_LE(most[i], static_cast<std::uint64_t>(100e9 / 8 * 3000 / hz) + 1) << links[i]["label"];
  }
  EXPECT_EQ(sum[0], 2u * 2 * (60000 + 30000 + 45000) * 4);  // each layer forward and backward, twice

  // steps.json is the breakdown of the step timeline.
  const auto steps = nlohmann::json::parse(slurp(tmp.path() / "trace/steps.json"));
  ASSERT_EQ(steps["steps"].size(), 2u);
  EXPECT_EQ(steps["steps"][1]["time_ps"].get<std::uint64_t>(), timeline.steps[1].duration().count());

  // The timeline: one slice per chunk on each link track, and the MemoryX and step tracks.
  const auto tl = nlohmann::json::parse(slurp(tmp.path() / "trace/timeline.json"));
  std::map<std::string, std::string> thread_names;  // "pid/tid" -> name
  std::map<std::string, int> slices;
  for (const auto& e : tl["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name")
      thread_names[std::to_string(e["pid"].get<int>()) + "/" + std::to_string(e["tid"].get<int>())] = e["args"]["name"];
  for (const auto& e : tl["traceEvents"])
    if (e["ph"] == "X")
      ++slices[thread_names[std::to_string(e["pid"].get<int>()) + "/" + std::to_string(e["tid"].get<int>())]];
  const std::uint64_t chunks = stats["memoryx"]["stream_out0"]["chunks"];
  EXPECT_EQ(slices["p0 MemoryX to SwarmX (weights)"], static_cast<int>(chunks));
  EXPECT_EQ(slices["steps"], 2);
  EXPECT_EQ(slices["optimizer"], 12);  // 3 layers x 2 steps, on MemoryX's track and on the steps' one
  EXPECT_GT(slices["weight streams"], 0);
}

TEST(TraceCluster, StreamLoopCommandTracesAndReports) {
  test::TempDir tmp;
  const std::string out = (tmp.path() / "loop").string();
  const auto r = test::wafersim(
      "stream-loop tiny-cluster --params 3e5 --layers 3 --steps 2 --trace windows,timeline "
      "--json -o " +
      out);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["steps"].size(), 2u);
  EXPECT_EQ(j["trace"], out + "/trace");
  const auto rep = test::wafersim("report " + out, true);
  ASSERT_EQ(rep.code, 0) << rep.out;
  const std::string html = slurp(tmp.path() / "loop/report.html");
  EXPECT_NE(html.find("\"present\":true"), std::string::npos);
  const auto vcd =
      test::wafersim("stream-loop tiny-cluster --params 3e5 --trace vcd --trace-pes 0,0 --force -o " + out, true);
  EXPECT_EQ(vcd.code, 2);
  EXPECT_NE(vcd.out.find("no wafer fabric"), std::string::npos) << vcd.out;
}

}  // namespace
}  // namespace wafersim::trace_cluster_test

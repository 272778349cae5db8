// What a run folder and a sweep table give a user: numeric sweep tables with a units sidecar,
// `wafersim diff` between two runs and `wafersim rerun` repeating a run from its folder alone.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "sim/huge_pages.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::run_folder_test {
namespace {
using test::slurp;
using test::wafersim;
namespace fs = std::filesystem;

TEST(SweepTable, QuantitiesAreBaseUnitNumbersWithAUnitsSidecar) {
  test::TempDir tmp;
  const auto spec = tmp.write("s.yaml",
                              "sweep:\n"
                              "  name: clocks\n"
                              "  platform: tiny\n"
                              "  workload: {command: run, cycles: 100}\n"
                              "  parameters:\n"
                              "    - {key: wafer.clock, values: [1.14556 GHz, 857.986 MHz]}\n"
                              "    - {key: wafer.pe.sram.size, values: [16 KiB]}\n"
                              "    - {key: fabric.hop_latency, values: [1, 2], unit: cycles}\n"
                              "  metrics: [cluster.wafer0.cycles, {name: t, path: summary.simulated_seconds}]\n");
  const fs::path out = tmp.path() / "out";
  ASSERT_EQ(wafersim("sweep " + spec + " --jobs 1 --out " + out.string()).code, 0);
  const std::string csv = slurp(out / "results.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "index,wafer.clock,wafer.pe.sram.size,fabric.hop_latency,status,exit_code,wall_seconds,"
            "cluster.wafer0.cycles,t");
  EXPECT_NE(csv.find("\n0,1145560000,16384,1,ok,0,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n3,857986000,16384,2,ok,0,"), std::string::npos) << csv;
  const auto units = nlohmann::json::parse(slurp(out / "results.units.json"));
  EXPECT_EQ(units["format"], "wafersim-sweep-units/1");
  EXPECT_EQ(units["columns"],
            nlohmann::json::parse(R"({"wafer.clock": "Hz", "wafer.pe.sram.size": "B", "fabric.hop_latency": "cycles",
                                      "wall_seconds": "s", "cluster.wafer0.cycles": "cycles", "t": "s"})"));
}

TEST(RunDiff, ListsTheLargestChangeFirstAndNothingForARerun) {
  test::TempDir tmp;
  const std::string a = (tmp.path() / "a").string(), b = (tmp.path() / "b").string();
  ASSERT_EQ(wafersim("run tiny --cycles 100 -o " + a).code, 0);
  ASSERT_EQ(wafersim("run tiny --cycles 300 -o " + b).code, 0);
  const auto r = wafersim("diff " + a + " " + b + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_GE(j["differing"].get<int>(), 1);
  // Largest |relative change| first; the cycles tripled (the idle wafer's leakage energy with
  // them, within rounding).
  const auto& list = j["differences"];
  for (std::size_t i = 1; i < list.size(); ++i)
    EXPECT_GE(std::abs(list[i - 1]["relative"].get<double>()), std::abs(list[i]["relative"].get<double>())) << i;
  EXPECT_NEAR(list[0]["relative"].get<double>(), 2.0, 1e-12);
  const auto cycles =
      std::find_if(list.begin(), list.end(), [](const auto& d) { return d["path"] == "cluster.wafer0.cycles"; });
  ASSERT_NE(cycles, list.end());
  EXPECT_EQ((*cycles)["unit"], "cycles");
  EXPECT_EQ((*cycles)["a"], 100);
  EXPECT_EQ((*cycles)["b"], 300);
  EXPECT_EQ((*cycles)["relative"], 2.0);
  const auto text = wafersim("diff " + a + " " + b);
  EXPECT_NE(text.out.find("cluster.wafer0.cycles"), std::string::npos);
  EXPECT_NE(text.out.find("+200.00%"), std::string::npos) << text.out;
  EXPECT_EQ(wafersim("diff " + a + " " + b + " --exit-code").code, 1);
  EXPECT_EQ(wafersim("diff " + a + " " + a + " --exit-code").code, 0);
  const auto missing = wafersim("diff " + a + " " + (tmp.path() / "nope").string(), true);
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.out.find("nope: no such run folder or stats.json"), std::string::npos) << missing.out;
}

TEST(Rerun, RepeatsAModelRunFromItsFolderAlone) {
  test::TempDir tmp;
  const std::string model = tmp.write("m/my-mlp.yaml", "base: tiny-mlp\nbatch: 8\n");
  const std::string platform = tmp.write("p/plat.yaml", "base: tiny\nfabric: {queue_depth: 3}\n");
  const fs::path first = tmp.path() / "first", again = tmp.path() / "again";
  ASSERT_EQ(
      wafersim("run " + platform + " --model " + model + " --seed 7 --set wafer.clock=\"1 GHz\" -o " + first.string())
          .code,
      0);
  const auto run = nlohmann::json::parse(slurp(first / "run.json"));
  ASSERT_TRUE(run["argv"].is_array());
  EXPECT_EQ(run["argv"][1], "run");
  EXPECT_EQ(run["argv"][7], "--set");
  EXPECT_EQ(run["argv"][8], "wafer.clock=1 GHz");
  // The inputs may change or vanish: the folder has its own copies.
  fs::remove_all(tmp.path() / "m");
  fs::remove_all(tmp.path() / "p");
  const auto r = wafersim("rerun " + first.string() + " --out " + again.string(), true);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(slurp(again / "stats.json"), slurp(first / "stats.json"));
  EXPECT_EQ(slurp(again / "model.json"), slurp(first / "model.json"));
  const auto dry = wafersim("rerun " + first.string() + " --dry-run");
  EXPECT_NE(dry.out.find("first/inputs/1/my-mlp.yaml --seed 7"), std::string::npos) << dry.out;
  const auto none = wafersim("rerun " + tmp.path().string(), true);
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.out.find("rerun.json: cannot read it"), std::string::npos) << none.out;
}

TEST(Rerun, FollowsFilesNamedInsideYaml) {
  test::TempDir tmp;
  tmp.write("cfg/base.yaml", "base: tiny\nfabric: {queue_depth: 2}\n");
  const std::string platform = tmp.write("cfg/top.yaml", "base: base.yaml\nwafer: {clock: 900 MHz}\n");
  const fs::path first = tmp.path() / "first", again = tmp.path() / "again";
  ASSERT_EQ(wafersim("traffic " + platform + " --rate 0.2 --measure 300 -o " + first.string()).code, 0);
  EXPECT_TRUE(fs::is_regular_file(first / "inputs" / "0" / "base.yaml"));
  fs::remove_all(tmp.path() / "cfg");
  ASSERT_EQ(wafersim("rerun " + first.string() + " -o " + again.string()).code, 0);
  EXPECT_EQ(slurp(again / "stats.json"), slurp(first / "stats.json"));
}

// The kernel's transparent huge page mode, as the run would read it ("" when unknown).
std::string thp_mode() {
  const std::string line = slurp("/sys/kernel/mm/transparent_hugepage/enabled");
  const auto open = line.find('['), close = line.find(']');
  return open == std::string::npos || close == std::string::npos ? "" : line.substr(open + 1, close - open - 1);
}

TEST(RunJson, SaysHowTheHeapIsPagedAndWafersimHugePagesZeroTurnsItOff) {
  test::TempDir tmp;
  const std::string on = (tmp.path() / "on").string(), off = (tmp.path() / "off").string();
  ASSERT_EQ(wafersim("run tiny --cycles 50 -o " + on).code, 0);
  ASSERT_EQ(wafersim("run tiny --cycles 50 -o " + off, false, "WAFERSIM_HUGE_PAGES=0").code, 0);
  const auto a = nlohmann::json::parse(slurp(fs::path(on) / "run.json"));
  const auto b = nlohmann::json::parse(slurp(fs::path(off) / "run.json"));
  const std::string mode = thp_mode();
  // madvise: malloc is asked for huge pages unless turned off; always: the kernel gives them.
  const bool asks = mode == "madvise" && sim::malloc_huge_pages_buildable();
  EXPECT_EQ(a.at("huge_pages"), mode == "always" ? "always" : asks ? "malloc" : "none");
  EXPECT_EQ(b.at("huge_pages"), mode == "always" ? "always" : "none");
  EXPECT_EQ(slurp(fs::path(on) / "stats.json"), slurp(fs::path(off) / "stats.json"));
}

}  // namespace
}  // namespace wafersim::run_folder_test

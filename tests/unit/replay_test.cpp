// `wafersim traffic --capture FILE` and `--replay FILE`: a replayed run's fabric statistics
// are the recorded run's, saturated or drained, and a bad file is an error at its line.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::replay_test {
namespace {
using test::slurp;
using test::wafersim;
namespace fs = std::filesystem;

nlohmann::json fabric_stats(const fs::path& run) {
  return nlohmann::json::parse(slurp(run / "stats.json"))["stats"]["wafer0"]["fabric"];
}

void expect_replay_is_exact(const std::string& traffic) {
  test::TempDir tmp;
  const std::string trace = (tmp.path() / "run.inj").string();
  const auto first = wafersim("traffic tiny " + traffic + " --capture " + trace + " -o " + (tmp.path() / "a").string());
  ASSERT_EQ(first.code, 0) << traffic;
  const auto again = wafersim("traffic tiny --replay " + trace + " --json -o " + (tmp.path() / "b").string());
  ASSERT_EQ(again.code, 0) << traffic;
  const auto j = nlohmann::json::parse(again.out);
  EXPECT_EQ(j["pattern"], "replay");
  const auto recorded = fabric_stats(tmp.path() / "a");
  ASSERT_GT(recorded["wavelets_forwarded"].get<std::uint64_t>(), 1000u) << traffic;
  EXPECT_EQ(fabric_stats(tmp.path() / "b"), recorded) << traffic;
  EXPECT_EQ(nlohmann::json::parse(slurp(tmp.path() / "b" / "run.json"))["cycles"],
            nlohmann::json::parse(slurp(tmp.path() / "a" / "run.json"))["cycles"]);
}

TEST(Replay, SaturatedHotspotReplaysExactly) {
  expect_replay_is_exact(
      "--pattern hotspot --hotspot 5,2 --rate 0.3 --colors 2 --packet-size 3 --warmup 100 "
      "--measure 400 --drain 1500 --seed 4");
}

TEST(Replay, DrainedUniformReplaysExactly) {
  expect_replay_is_exact("--pattern uniform --rate 0.05 --warmup 100 --measure 800 --seed 9");
}

TEST(Replay, HandWrittenPacketsAreDelivered) {
  test::TempDir tmp;
  const std::string file = tmp.write("two.inj",
                                     "wafersim-injections/1\n"
                                     "mesh 8 8\ncolors 1\nend_cycle 60\n"
                                     "cycle src_x src_y dst_x dst_y size\n"
                                     "3 0 0 7 7 4   # corner to corner\n"
                                     "10 7 0 0 7 2\n");
  const auto r = wafersim("traffic tiny --replay " + file + " --json -o " + (tmp.path() / "r").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["packets"], 2);
  EXPECT_EQ(j["drained"], true);
  EXPECT_EQ(j["cycles"], 60);
  EXPECT_EQ(fabric_stats(tmp.path() / "r")["wavelets_delivered"], 6);
}

TEST(Replay, BadFilesAndOptionsAreInputErrors) {
  test::TempDir tmp;
  const std::string head =
      "wafersim-injections/1\nmesh 8 8\ncolors 1\nend_cycle 100\ncycle src_x src_y dst_x dst_y size\n";
  const std::pair<std::string, std::string> cases[] = {
      {head + "5 0 0 9 1 2\n", ":6:7: dst_x: expected a whole number in 0 .. 7, found '9'"},
      {head + "5 0 0 1 1 0\n", ":6:11: size: expected at least 1 wavelet"},
      {head + "5 0 0 1 1 1\n4 0 0 1 1 1\n", ":7:1: cycle 4 is before the previous record's 5"},
      {head + "5 0 0 1 1\n", ":6:1: expected 6 numbers (cycle src_x src_y dst_x dst_y size), found 5"},
      {"wafersim-injections/2\n", ":1:1: expected the first line 'wafersim-injections/1'"},
      {"wafersim-injections/1\nmesh 8\n", ":2:1: expected the header line 'mesh' with 2 values"},
      {"wafersim-injections/1\nmesh 0 8\n", ":2:6: mesh width: expected at least 1 PE"},
  };
  for (const auto& [text, message] : cases) {
    const std::string file = tmp.write("bad.inj", text);
    const auto r = wafersim("traffic tiny --replay " + file + " -o " + (tmp.path() / "x").string(), true);
    EXPECT_EQ(r.code, 2) << text;
    EXPECT_NE(r.out.find(file + message), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(tmp.path() / "x"));
  }
  const std::string other = tmp.write("o.inj",
                                      "wafersim-injections/1\nmesh 4 4\ncolors 1\nend_cycle 10\n"
                                      "cycle src_x src_y dst_x dst_y size\n");
  auto r = wafersim("traffic tiny --replay " + other, true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("recorded on a 4 x 4 mesh; platform 'tiny' has 8 x 8"), std::string::npos) << r.out;
  r = wafersim("traffic tiny --replay " + other + " --rate 0.1", true);
  EXPECT_EQ(r.code, 2);
  r = wafersim("traffic tiny --rates 0.1,0.2 --capture " + (tmp.path() / "c.inj").string(), true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--capture and --replay take one load"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace wafersim::replay_test

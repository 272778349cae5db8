// Determinism end to end: every output file of a run except run.json (the metadata block with
// wall time) is byte-identical across repeated runs; a sweep run with one worker and with two
// gives the same point folders and the same results table; sampled sweeps expand the same
// points from the same seed.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace determinism_test {
namespace {
using wafersim::test::slurp;
using wafersim::test::wafersim;
namespace fs = std::filesystem;

// Every regular file under `root` (relative path -> contents), run.json and status/timing
// files that carry wall time left out.
std::map<std::string, std::string> files_of(const fs::path& root, const std::vector<std::string>& skip) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const auto name = e.path().filename().string();
    bool skipped = false;
    for (const auto& s : skip) skipped = skipped || name == s;
    if (!skipped) out[fs::relative(e.path(), root).string()] = slurp(e.path());
  }
  return out;
}

void expect_same_files(const fs::path& a, const fs::path& b, const std::vector<std::string>& skip) {
  const auto fa = files_of(a, skip);
  const auto fb = files_of(b, skip);
  ASSERT_FALSE(fa.empty());
  ASSERT_EQ(fa.size(), fb.size());
  for (const auto& [name, text] : fa) {
    ASSERT_TRUE(fb.count(name)) << name;
    EXPECT_EQ(text, fb.at(name)) << name << " differs between " << a << " and " << b;
  }
}

// The CSV without the named column.
std::string drop_column(const std::string& csv, const std::string& column) {
  std::istringstream in(csv);
  std::string line;
  std::ostringstream out;
  long drop = -1;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::istringstream ls(line);
    for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
    if (drop < 0) {
      for (std::size_t i = 0; i < f.size(); ++i)
        if (f[i] == column) drop = static_cast<long>(i);
    }
    for (std::size_t i = 0; i < f.size(); ++i)
      if (static_cast<long>(i) != drop) out << f[i] << ';';
    out << '\n';
  }
  return out.str();
}

TEST(Determinism, TrafficRunFilesAreIdenticalExceptTheMetadata) {
  wafersim::test::TempDir d;
  const std::string cmd = "traffic tiny --pattern transpose --rate 0.2 --packet-size 3 --colors 2 --seed 7 --out ";
  ASSERT_EQ(wafersim(cmd + (d.path() / "a").string()).code, 0);
  ASSERT_EQ(wafersim(cmd + (d.path() / "b").string()).code, 0);
  ASSERT_EQ(wafersim(cmd + (d.path() / "c").string() + " --no-idle-skip").code, 0);
  expect_same_files(d.path() / "a", d.path() / "b", {"run.json"});
  // Idle skipping changes neither statistics nor the resolved configuration.
  EXPECT_EQ(slurp(d.path() / "a" / "stats.json"), slurp(d.path() / "c" / "stats.json"));
  EXPECT_EQ(slurp(d.path() / "a" / "stats.txt"), slurp(d.path() / "c" / "stats.txt"));
  // A different seed gives different traffic: the comparison above can fail.
  ASSERT_EQ(wafersim("traffic tiny --pattern transpose --rate 0.2 --packet-size 3 --colors 2 --seed 8 --out " +
                     (d.path() / "e").string())
                .code,
            0);
  EXPECT_NE(slurp(d.path() / "a" / "stats.json"), slurp(d.path() / "e" / "stats.json"));
}

TEST(Determinism, SweepWithOneWorkerAndWithTwoGivesTheSameResults) {
  wafersim::test::TempDir d;
  auto spec = d.write("s.yaml",
                      "sweep:\n"
                      "  name: det\n"
                      "  platform: tiny\n"
                      "  workload: {command: traffic, pattern: uniform, rate: 0.25, packet-size: 2}\n"
                      "  parameters:\n"
                      "    - {key: fabric.queue_depth, values: [1, 2, 4]}\n"
                      "    - {key: workload.seed, values: [1, 2]}\n"
                      "  metrics: [{name: latency, path: summary.latency_avg}, "
                      "{name: throughput, path: summary.accepted}]\n");
  const auto one = d.path() / "one";
  const auto two = d.path() / "two";
  ASSERT_EQ(wafersim("sweep " + spec + " --jobs 1 --out " + one.string()).code, 0);
  ASSERT_EQ(wafersim("sweep " + spec + " --jobs 2 --out " + two.string()).code, 0);
  // Point folders: the results are the same (point.json, stdout.txt and run.json carry the
  // folder, host and start time: metadata).
  for (const char* point : {"00000", "00001", "00002", "00003", "00004", "00005"})
    for (const char* f : {"stats.json", "stats.txt", "config.yaml", "done"}) {
      ASSERT_TRUE(fs::exists(one / "points" / point / f)) << point << "/" << f;
      EXPECT_EQ(slurp(one / "points" / point / f), slurp(two / "points" / point / f)) << point << "/" << f;
    }
  EXPECT_EQ(drop_column(slurp(one / "results.csv"), "wall_seconds"),
            drop_column(slurp(two / "results.csv"), "wall_seconds"));
  // The points differ from each other, so equal tables mean equal results, not empty ones.
  const auto a = nlohmann::json::parse(slurp(one / "points" / "00000" / "stats.json"));
  const auto b = nlohmann::json::parse(slurp(one / "points" / "00001" / "stats.json"));
  EXPECT_NE(a, b);
}

TEST(Determinism, SampledSweepsExpandTheSamePointsFromTheSameSeed) {
  wafersim::test::TempDir d;
  const std::string body =
      "  platform: tiny\n"
      "  workload: {command: traffic, pattern: uniform, rate: 0.1}\n"
      "  combine: latin-hypercube\n"
      "  samples: 6\n"
      "  parameters:\n"
      "    - {key: fabric.queue_depth, range: {from: 1, to: 16}}\n"
      "    - {key: workload.rate, range: {from: 0.05, to: 0.4}}\n"
      "  metrics: [summary.accepted]\n";
  auto s1 = d.write("s1.yaml", "sweep:\n  name: lhs\n  seed: 11\n" + body);
  auto s2 = d.write("s2.yaml", "sweep:\n  name: lhs\n  seed: 12\n" + body);
  const auto a = wafersim("sweep " + s1 + " --list --json");
  const auto b = wafersim("sweep " + s1 + " --list --json");
  const auto c = wafersim("sweep " + s2 + " --list --json");
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
}

}  // namespace
}  // namespace determinism_test

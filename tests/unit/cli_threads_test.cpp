// `--threads N` on the simulating commands: the wafer's rows swept in bands by N host threads
// give a stats.json byte-identical to one thread's (traffic, run with a model, infer, train),
// run.json reports the threads and their busy and barrier time (and the engines' work, the same
// at every count), and a bad count is an input error (exit code 2).

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/parallel/team.h"
#include "sim/parallel/thread_policy.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::test::cli_threads_test {
namespace {

// Under AddressSanitizer a run is many times slower: one split (3 threads) against the serial
// run keeps each test within its timeout; the normal build checks every count.
#if defined(__SANITIZE_ADDRESS__)
#define WAFERSIM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WAFERSIM_TEST_ASAN 1
#endif
#endif
#ifdef WAFERSIM_TEST_ASAN
const std::vector<unsigned> kCounts = {1u, 3u};
#else
const std::vector<unsigned> kCounts = {1u, 2u, 3u, 4u, 8u};
#endif

// tiny with 40 rows: five granules of 8 rows, so up to five bands.
const std::string kTall = " --set wafer.width=16 --set wafer.height=40 ";

void expect_same_stats_at_every_count(const std::string& command) {
  TempDir dir;
  std::string serial;
  nlohmann::json serial_work;
  for (const unsigned n : kCounts) {
    SCOPED_TRACE("threads " + std::to_string(n));
    const auto out = dir.path() / ("t" + std::to_string(n));
    const auto r = wafersim(command + kTall + "--threads " + std::to_string(n) + " --out " + out.string());
    ASSERT_EQ(r.code, 0) << r.out;
    const std::string stats = slurp(out / "stats.json");
    const auto run = nlohmann::json::parse(slurp(out / "run.json"));
    EXPECT_EQ(run["threads"]["threads"].get<unsigned>(), n);
    // The engines' work (cycles, core ticks, router visits) does not depend on the split.
    const auto& work = run["engine"];
    EXPECT_GT(work["cycles_ticked"].get<std::uint64_t>(), 0u);
    EXPECT_GT(work["router_visits"].get<std::uint64_t>(), 0u);
    if (n == 1) {
      serial = stats;
      serial_work = work;
      EXPECT_GT(serial.size(), 1000u);
      EXPECT_EQ(run["threads"]["jobs"].get<std::uint64_t>(), 0u);
      EXPECT_EQ(run["threads"]["rebalances"].get<std::uint64_t>(), 0u);
      continue;
    }
    EXPECT_EQ(stats, serial);
    EXPECT_EQ(work, serial_work);
    // Every job ran a part on each member up to the band count; members report their time.
    ASSERT_EQ(run["threads"]["members"].size(), n);
    EXPECT_GT(run["threads"]["jobs"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(run["threads"]["members"][0]["parts"], run["threads"]["jobs"]);
    EXPECT_GT(run["threads"]["members"][1]["busy_seconds"].get<double>(), 0.0);
    // How often the bands moved depends on the host's timing; at most once per 128 jobs.
    EXPECT_LE(run["threads"]["rebalances"].get<std::uint64_t>(), run["threads"]["jobs"].get<std::uint64_t>() / 128);
  }
}

TEST(CliThreads, TrafficStatisticsAreTheSameAtEveryThreadCount) {
  expect_same_stats_at_every_count("traffic tiny --pattern uniform --rate 0.3 --measure 200");
}

TEST(CliThreads, HotspotPacketStatisticsAreTheSameAtEveryThreadCount) {
  expect_same_stats_at_every_count(
      "traffic tiny --pattern hotspot --hotspot 3,20 --rate 0.1 --packet-size 3 --measure 200");
}

TEST(CliThreads, ModelRunInferAndTrainStatisticsAreTheSameAtEveryThreadCount) {
  expect_same_stats_at_every_count("run tiny --model tiny-mlp");
  expect_same_stats_at_every_count("infer tiny --model tiny-mlp --placement streaming");
  // The replay's one simulated wafer is swept in bands; the co-simulation spreads its wafers over
  // the threads instead (Cosim.StatisticsAreTheSameForAnyThreadCount).
  expect_same_stats_at_every_count("train tiny-cluster --model tiny-mlp --steps 1 --cluster-model replay");
}

// A compiled program where the cores do most of the work (the core array ticked in bands): a
// linear layer over the whole 16 x 40 grid, functional and timing-only.
TEST(CliThreads, CoreBoundStatisticsAreTheSameAtEveryThreadCount) {
  TempDir files;
  const std::string gemm = files.write("gemm.yaml", R"(name: gemm
dtype: fp16
batch: 1
sequence: 12
inputs: [{name: x, kind: activations, features: 64}]
layers:
  - {name: fc, kind: linear, inputs: [x], features: 64}
)");
  expect_same_stats_at_every_count("run tiny --model " + gemm);
  expect_same_stats_at_every_count("run tiny --model " + gemm + " --timing-only");
}

// A defective wafer: its detours are links longer than a hop, some of them crossing bands.
TEST(CliThreads, DefectiveWaferStatisticsAreTheSameAtEveryThreadCount) {
  TempDir files;
  files.write("defects.yaml", "cores:\n  - {at: [0, 1]}\n  - {at: [3, 17]}\n  - {at: [9, 30]}\n");
  const std::string platform =
      files.write("p.yaml", "base: tiny\nredundancy: {spare_rows: 1, group: 13}\ndefects: {file: defects.yaml}\n");
  expect_same_stats_at_every_count("traffic " + platform + " --rate 0.2 --measure 300");
}

TEST(CliThreads, BadThreadCountsAreInputErrors) {
  EXPECT_EQ(wafersim("traffic tiny --rate 0.1 --threads -1", true).code, 2);
  EXPECT_EQ(wafersim("traffic tiny --rate 0.1 --threads 2000", true).code, 2);
  const auto two = wafersim("traffic tiny --rate 0.1 --threads two", true);
  EXPECT_EQ(two.code, 2);
  EXPECT_NE(two.out.find("--threads: expected auto or a thread count from 0 to 1024, found 'two'"), std::string::npos)
      << two.out;
  const auto help = wafersim("traffic --help");
  EXPECT_NE(help.out.find("--threads"), std::string::npos);
}

// The default, auto: one thread below 128 x 128 PEs, every hardware thread from there up; an
// explicit count or 0 (the hardware threads) whatever the size.
TEST(CliThreads, AutoTakesTheHardwareThreadsFromA128By128WaferUp) {
  EXPECT_EQ(sim::parallel::resolve_threads(sim::parallel::kAutoThreads, 128 * 127, 8), 1u);
  EXPECT_EQ(sim::parallel::resolve_threads(sim::parallel::kAutoThreads, 128 * 128, 8), 8u);
  EXPECT_EQ(sim::parallel::resolve_threads(sim::parallel::kAutoThreads, 128 * 128, 1), 1u);
  EXPECT_EQ(sim::parallel::resolve_threads(3, 16, 8), 3u);

  const unsigned hardware = sim::parallel::Team::hardware_threads();
  TempDir dir;
  const auto threads_of = [&](const std::string& name, const std::string& options) {
    const auto out = dir.path() / name;
    const auto r =
        wafersim("traffic tiny --rate 0.01 --warmup 0 --measure 20 --drain 100 " + options + " --out " + out.string());
    EXPECT_EQ(r.code, 0) << r.out;
    return nlohmann::json::parse(slurp(out / "run.json"))["threads"]["threads"].get<unsigned>();
  };
  EXPECT_EQ(threads_of("small", ""), 1u);
  EXPECT_EQ(threads_of("below", "--set wafer.width=127 --set wafer.height=128"), 1u);
  EXPECT_EQ(threads_of("large", "--set wafer.width=128 --set wafer.height=128"), hardware);
  EXPECT_EQ(threads_of("explicit", "--set wafer.width=128 --set wafer.height=128 --threads 1"), 1u);
  EXPECT_EQ(threads_of("zero", "--threads 0"), hardware);
}

// A co-simulated cluster's auto: a thread per wafer of the process, at most the hardware's,
// whatever the wafers' size (its job is per window, not per cycle).
TEST(CliThreads, AutoGivesACoSimulatedClustersWafersAThreadEach) {
  using sim::parallel::kAutoThreads;
  using sim::parallel::resolve_wafer_threads;
  EXPECT_EQ(resolve_wafer_threads(kAutoThreads, 4, 8), 4u);
  EXPECT_EQ(resolve_wafer_threads(kAutoThreads, 4, 2), 2u);
  EXPECT_EQ(resolve_wafer_threads(kAutoThreads, 1, 8), 1u);
  EXPECT_EQ(resolve_wafer_threads(kAutoThreads, 0, 8), 1u);
  EXPECT_EQ(resolve_wafer_threads(3, 1, 8), 3u);

  const unsigned hardware = sim::parallel::Team::hardware_threads();
  TempDir dir;
  const auto wafer_threads_of = [&](const std::string& name, const std::string& options) {
    const auto out = dir.path() / name;
    const auto r = wafersim("train tiny-cluster --model tiny-mlp --steps 1 " + options + " --out " + out.string());
    EXPECT_EQ(r.code, 0) << r.out;
    return nlohmann::json::parse(slurp(out / "run.json"))["ranks"]["members"][0]["threads"].get<unsigned>();
  };
  EXPECT_EQ(wafer_threads_of("auto", ""), std::min(hardware, 2u));
  EXPECT_EQ(wafer_threads_of("four", "--set cluster.systems=4"), std::min(hardware, 4u));
  EXPECT_EQ(wafer_threads_of("one", "--threads 1"), 1u);
}

}  // namespace
}  // namespace wafersim::test::cli_threads_test

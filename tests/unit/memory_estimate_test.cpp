// The host memory estimate (platforms/memory_estimate.h) against the peak a run measures
// (run.json's peak_memory_bytes), within a factor of 2 on three sizes; runs too large for the
// machine or for --max-memory are refused before anything is built.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "platforms/memory_estimate.h"
#include "platforms/platform_spec.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::memory_estimate_test {
namespace {

using test::wafersim;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(MemoryEstimate, WithinTwiceTheMeasuredPeakOnThreeSizes) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory is not part of the estimate";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer's shadow memory is not part of the estimate";
#endif
#endif
  test::TempDir tmp;
  for (const int side : {8, 64, 256}) {
    const std::vector<std::string> set{"wafer.width=" + std::to_string(side), "wafer.height=" + std::to_string(side)};
    const auto spec = platforms::load_platform("tiny", set).spec;
    const auto estimate = platforms::estimate_memory(spec, {true, 1});
    const std::string out = (tmp.path() / std::to_string(side)).string();
    const auto r = wafersim("traffic tiny --set " + set[0] + " --set " + set[1] +
                            " --pattern uniform --rate 0.05 --warmup 0 --measure 20 --drain 100 --json -o " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    const auto run = nlohmann::json::parse(test::slurp(tmp.path() / std::to_string(side) / "run.json"));
    const double peak = run.at("peak_memory_bytes").get<double>();
    const double ratio = static_cast<double>(estimate.bytes) / peak;
    EXPECT_GT(ratio, 0.5) << side << " x " << side << ": estimate " << estimate.bytes << ", peak " << peak;
    EXPECT_LT(ratio, 2.0) << side << " x " << side << ": estimate " << estimate.bytes << ", peak " << peak;
  }
}

TEST(MemoryEstimate, TooLargeIsRefusedBeforeTheRunWithTheNumbers) {
  const auto big = wafersim("traffic tiny --set wafer.width=4096 --set wafer.height=4096 --rate 0.1", true);
  EXPECT_EQ(big.code, 2) << big.out;
  EXPECT_TRUE(has(big.out, "the run does not fit: it needs about")) << big.out;
  EXPECT_TRUE(has(big.out, "4096 x 4096 PEs: mesh")) << big.out;
  const auto limited = wafersim("run tiny --cycles 10 --max-memory '1 MiB'", true);
  EXPECT_EQ(limited.code, 2) << limited.out;
  EXPECT_TRUE(has(limited.out, "more than --max-memory 1.0 MiB")) << limited.out;
  // train: the co-simulated cluster's wafers, and the replay's one wafer (forked) alike.
  for (const std::string mode : {"cosim", "replay"}) {
    const auto train =
        wafersim("train tiny-cluster --model tiny-mlp --cluster-model " + mode + " --max-memory '1 MiB'", true);
    EXPECT_EQ(train.code, 2) << mode << train.out;
    EXPECT_TRUE(has(train.out, "more than --max-memory 1.0 MiB")) << mode << train.out;
  }
  const auto bad = wafersim("run tiny --cycles 10 --max-memory lots", true);
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(has(bad.out, "--max-memory: expected a data size such as \"8 GiB\", found 'lots'")) << bad.out;
  const auto info = wafersim("info tiny", true);
  EXPECT_TRUE(has(info.out, "host memory to simulate")) << info.out;
}

// A defective wafer adds its mesh's link-delay table (8 B a router, every wafer) and its remap's
// positions while it is built (4 B a PE); a platform without defects builds neither.
TEST(MemoryEstimate, DefectsAddTheRemapsLinkDelayTable) {
  const std::string tiny = std::string(WAFERSIM_SOURCE_DIR) + "/examples/platforms/tiny-defects.yaml";
  const auto clean = platforms::load_platform(tiny, {"cluster.systems=2"}).spec;
  const auto defective = platforms::load_platform(tiny, {"cluster.systems=2", "defects.density_per_mm2=0.5"}).spec;
  const std::uint64_t pes = clean.wafer.pe_count();
  for (std::uint32_t wafers : {1U, 2U}) {
    const auto a = platforms::estimate_memory(clean, platforms::Workload{false, wafers});
    const auto b = platforms::estimate_memory(defective, platforms::Workload{false, wafers});
    EXPECT_EQ(b.bytes - a.bytes, wafers * pes * 8 + pes * 4) << wafers;
    EXPECT_FALSE(has(a.breakdown, "defects")) << a.breakdown;
    EXPECT_TRUE(has(b.breakdown, "defects")) << b.breakdown;
  }
}

}  // namespace
}  // namespace wafersim::memory_estimate_test

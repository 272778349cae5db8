// Energy (docs/energy.md): exact sums of counted events times coefficients on hand-counted
// programs, static power alone without activity, one coefficient's share, energy unchanged by
// idle skipping and by timing-only runs, trace windows that add up, training steps and
// samples, the presets' peak against the published system power, and the new units.
// When the parallel engine lands, the idle-skipping comparison gains a thread count.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "energy/peak.h"
#include "platforms/figures.h"
#include "platforms/platform_spec.h"
#include "sim/units/quantity.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::energy::energy_test {
namespace {
using nlohmann::json;
using test::slurp;
using test::wafersim;

const std::string kExamples = std::string(WAFERSIM_SOURCE_DIR) + "/examples/programs/";
const std::string kStream = "--program " + kExamples + "stream.s --routes " + kExamples + "stream-routes.yaml";

// The tiny preset's coefficients (WSE-2 values, platforms/wse2.yaml; its system static power
// scaled to 64 PEs, platforms/tiny.yaml), in joules and watts.
constexpr double kFmovF16 = 12.5e-15, kFmulF16 = 275e-15, kFmacF16 = 375e-15, kInstruction = 17.5e-12;
constexpr double kActive = 2e-12;
constexpr double kSramByte = 312.5e-15, kTraversal = 1e-12, kHop = 900e-15, kRamp = 200e-15;
constexpr double kPeStatic = 2e-3, kRouterStatic = 0.5e-3, kSystemStatic = 127e-3, kEfficiency = 0.87;
constexpr double kClock = 1.1e9;
constexpr int kPes = 64;

// y = 2 x + y over 8 fp16 values in memory: two steps of 4 FMAC lanes.
const char* kFmac = R"(
.pe 1, 1
.data x, 0x000, f16, 1, 2, 3, 4, 5, 6, 7, 8
.data y, 0x108, f16, 1, 1, 1, 1, 1, 1, 1, 1
.dsd vx, mem, f16, base=x, len=8
.dsd vy, mem, f16, base=y, len=8
.task main, 0
.entry main
main:
  mov.f16 r1, 2.0
  fmac.f16 vy, vy, vx, r1
  ret
)";

json stats_of(const std::filesystem::path& run) { return json::parse(slurp(run / "stats.json"))["stats"]; }

json run(const test::TempDir& dir, const std::string& name, const std::string& args) {
  const auto r = wafersim(args + " --out " + (dir.path() / name).string(), true);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.out;
  return stats_of(dir.path() / name);
}

TEST(Energy, ExactSumsOfHandCountedEvents) {
  // stream.s: PE (0, 0) sends 12 fp16 values (fmov) three hops east to PE (3, 0), which
  // multiplies them by 2 into its memory (fmul), reads the clock and stores it.
  test::TempDir dir;
  const json s = run(dir, "s", "exec tiny " + kStream);
  const json& cores = s["cluster"]["wafer0"]["cores"];
  EXPECT_EQ(cores["lane_ops"]["mov"][0], 12);  // fmov.f16
  EXPECT_EQ(cores["lane_ops"]["mul"][0], 12);  // fmul.f16
  EXPECT_EQ(cores["instructions"], 2 + 5);     // fmov, ret; mov, fmul, tsc, st, ret
  EXPECT_EQ(cores["sram_reads"], 3);           // 24 B of x in 8-byte port words
  EXPECT_EQ(cores["sram_writes"], 12 + 1);     // one fp16 element of y per wavelet, and the store
  EXPECT_EQ(cores["wavelets_out"], 12);
  const json& fabric = s["cluster"]["wafer0"]["fabric"];
  EXPECT_EQ(fabric["wavelets_forwarded"], 4 * 12);  // east from x = 0, 1, 2, then the ramp at x = 3
  EXPECT_EQ(fabric["forwarded_by_port"][1], 3 * 12);
  EXPECT_EQ(fabric["forwarded_by_port"][4], 12);

  const json& w = s["energy"]["wafer"];
  const double busy = cores["busy_cycles"].get<double>();
  EXPECT_DOUBLE_EQ(w["lanes"].get<double>(), 12 * kFmovF16 + 12 * kFmulF16);
  EXPECT_DOUBLE_EQ(w["instructions"].get<double>(), 7 * kInstruction);
  EXPECT_DOUBLE_EQ(w["active_cycles"].get<double>(), busy * kActive);
  EXPECT_DOUBLE_EQ(w["sram"].get<double>(), (3 + 13) * 8 * kSramByte);
  EXPECT_DOUBLE_EQ(w["router"].get<double>(), 48 * kTraversal);
  EXPECT_DOUBLE_EQ(w["link"].get<double>(), 36 * kHop);
  EXPECT_DOUBLE_EQ(w["ramp"].get<double>(), (12 + 12) * kRamp);
  const double seconds = s["energy"]["seconds"].get<double>();
  EXPECT_DOUBLE_EQ(seconds, s["cluster"]["wafer0"]["cores"]["finish_cycle"].get<double>() / kClock);
  EXPECT_DOUBLE_EQ(w["pe_static"].get<double>(), kPes * kPeStatic * seconds);
  EXPECT_DOUBLE_EQ(w["router_static"].get<double>(), kPes * kRouterStatic * seconds);
  double wafer = 0;
  for (const char* k :
       {"lanes", "instructions", "active_cycles", "sram", "router", "link", "ramp", "pe_static", "router_static"})
    wafer += w[k].get<double>();
  EXPECT_DOUBLE_EQ(w["total"].get<double>(), wafer);
  const json& sys = s["energy"]["system"];
  EXPECT_EQ(sys["edge_io"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(sys["static"].get<double>(), kSystemStatic * seconds);
  EXPECT_DOUBLE_EQ(sys["conversion"].get<double>(), wafer * (1 / kEfficiency - 1));
  EXPECT_DOUBLE_EQ(s["energy"]["total"].get<double>(), wafer + sys["total"].get<double>());
  EXPECT_DOUBLE_EQ(s["energy"]["pj_per_flop"].get<double>(),
                   s["energy"]["total"].get<double>() / cores["flops"].get<double>() * 1e12);
}

TEST(Energy, ExactSumsOfHandCountedLanes) {
  test::TempDir dir;
  const json s = run(dir, "f", "exec tiny --program " + dir.write("fmac.s", kFmac));
  const json& cores = s["cluster"]["wafer0"]["cores"];
  EXPECT_EQ(cores["lane_ops"]["fmac"], json::parse("[8, 0, 0, 0, 0]"));
  EXPECT_EQ(cores["instructions"], 3);    // mov, fmac, ret
  EXPECT_EQ(cores["sram_reads"], 2 + 2);  // 16 B of y and of x
  EXPECT_EQ(cores["sram_writes"], 2);     // 16 B of y
  const json& w = s["energy"]["wafer"];
  EXPECT_DOUBLE_EQ(w["lanes"].get<double>(), 8 * kFmacF16);
  EXPECT_DOUBLE_EQ(w["instructions"].get<double>(), 3 * kInstruction);
  EXPECT_DOUBLE_EQ(w["sram"].get<double>(), (4 + 2) * 8 * kSramByte);
  for (const char* k : {"router", "link", "ramp"}) EXPECT_EQ(w[k].get<double>(), 0.0) << k;
}

TEST(Energy, WithoutActivityOnlyStaticPower) {
  test::TempDir dir;
  const json s = run(dir, "idle", "run tiny --cycles 11000");
  const json& w = s["energy"]["wafer"];
  for (const char* k : {"lanes", "instructions", "active_cycles", "sram", "router", "link", "ramp"})
    EXPECT_EQ(w[k].get<double>(), 0.0) << k;
  const double seconds = 11000 / kClock;
  EXPECT_DOUBLE_EQ(s["energy"]["seconds"].get<double>(), seconds);
  const double leakage = kPes * (kPeStatic + kRouterStatic);
  EXPECT_DOUBLE_EQ(w["total"].get<double>(), leakage * seconds);
  EXPECT_DOUBLE_EQ(s["energy"]["average_power"].get<double>(), leakage / kEfficiency + kSystemStatic);
  EXPECT_DOUBLE_EQ(s["energy"]["peak_power"].get<double>(), s["energy"]["average_power"].get<double>());
}

TEST(Energy, DoublingOneCoefficientDoublesExactlyItsShare) {
  test::TempDir dir;
  const json a = run(dir, "a", "exec tiny " + kStream);
  const json b = run(dir, "b", "exec tiny " + kStream + " --set 'energy.pe.lane.mul.fp16=550 fJ'");
  const json& wa = a["energy"]["wafer"];
  const json& wb = b["energy"]["wafer"];
  EXPECT_DOUBLE_EQ(wb["lanes"].get<double>() - wa["lanes"].get<double>(), 12 * kFmulF16);
  for (const char* k :
       {"instructions", "active_cycles", "sram", "router", "link", "ramp", "pe_static", "router_static"})
    EXPECT_EQ(wb[k], wa[k]) << k;
  const json c = run(dir, "c", "exec tiny " + kStream + " --set 'energy.router.link_hop=1.8 pJ'");
  EXPECT_DOUBLE_EQ(c["energy"]["wafer"]["link"].get<double>(), 2 * wa["link"].get<double>());
  EXPECT_EQ(c["energy"]["wafer"]["router"], wa["router"]);
  // The voltage scales every wafer event by its square and the leakage by itself.
  const json v = run(dir, "v", "exec tiny " + kStream + " --set energy.voltage=0.5");
  EXPECT_DOUBLE_EQ(v["energy"]["wafer"]["sram"].get<double>(), 0.25 * wa["sram"].get<double>());
  EXPECT_DOUBLE_EQ(v["energy"]["wafer"]["pe_static"].get<double>(), 0.5 * wa["pe_static"].get<double>());
}

TEST(Energy, UnchangedByIdleSkipping) {
  test::TempDir dir;
  const json a = run(dir, "a", "exec tiny " + kStream);
  const json b = run(dir, "b", "exec tiny " + kStream + " --no-idle-skip");
  EXPECT_EQ(a["energy"], b["energy"]);
  const json m = run(dir, "m", "run tiny --model tiny-mlp");
  const json n = run(dir, "n", "run tiny --model tiny-mlp --no-idle-skip");
  EXPECT_EQ(m["energy"], n["energy"]);
}

TEST(Energy, TimingOnlyCountsTheSameEvents) {
  test::TempDir dir;
  const json f = run(dir, "f", "run tiny --model tiny-mlp --no-check");
  const json t = run(dir, "t", "run tiny --model tiny-mlp --timing-only");
  EXPECT_EQ(f["cluster"]["wafer0"]["cores"]["lane_ops"], t["cluster"]["wafer0"]["cores"]["lane_ops"]);
  EXPECT_EQ(f["energy"], t["energy"]);
}

TEST(Energy, CompiledStepsHaveTheirEnergyAndPower) {
  test::TempDir dir;
  const json s = run(dir, "m", "run tiny --model tiny-mlp");
  const json& steps = s["energy"]["steps"];
  ASSERT_EQ(steps.size(), 9u);
  double sum = 0, peak = 0;
  for (const auto& [name, st] : steps.items()) {
    const json& g = s["cluster"]["wafer0"]["model"][name];
    ASSERT_TRUE(g.contains("activity")) << name;
    EXPECT_GT(st["energy"].get<double>(), 0) << name;
    EXPECT_DOUBLE_EQ(st["power"].get<double>(), st["energy"].get<double>() / (g["cycles"].get<double>() / kClock));
    sum += st["energy"].get<double>();
    peak = std::max(peak, st["power"].get<double>());
  }
  // The steps leave out the cycles between them (host loads): less than the run's energy.
  EXPECT_LT(sum, s["energy"]["total"].get<double>());
  EXPECT_DOUBLE_EQ(s["energy"]["peak_power"].get<double>(), std::max(peak, s["energy"]["average_power"].get<double>()));
  // Every step's activity adds up to the cores' counts (loading inputs runs no PE code).
  std::uint64_t lanes = 0;
  for (const auto& [name, st] : steps.items())
    for (const auto& v : s["cluster"]["wafer0"]["model"][name]["activity"]["cores"]["lane_ops"]["fmac"])
      lanes += v.get<std::uint64_t>();
  std::uint64_t total = 0;
  for (const auto& v : s["cluster"]["wafer0"]["cores"]["lane_ops"]["fmac"]) total += v.get<std::uint64_t>();
  EXPECT_EQ(lanes, total);
}

// The lane energy of `lane_ops` (a cores group's lane_ops: per class, per format), priced by
// class and format (u16 and u32 as fp16 and fp32), in joules.
double lane_joules(const json& lane_ops) {
  const double fj[6][3] = {{12.5, 12.5, 25}, {100, 100, 225},   {275, 145, 925},
                           {375, 245, 1150}, {1500, 980, 4600}, {1125, 735, 3450}};
  const char* classes[6] = {"mov", "add", "mul", "fmac", "exp", "recip"};
  const int format_of[5] = {0, 1, 2, 0, 2};
  double j = 0;
  for (int c = 0; c < 6; ++c)
    for (int t = 0; t < 5; ++t) j += lane_ops[classes[c]][t].get<double>() * fj[c][format_of[t]] * 1e-15;
  return j;
}

// What every training run's energy has: the cluster's parts, one entry per step adding up to
// the total, and the energy per sample.
void expect_training_energy(const json& s) {
  const json& e = s["energy"];
  EXPECT_GT(e["wafer"]["lanes"].get<double>(), 0);
  EXPECT_GT(e["cluster"]["dram"].get<double>(), 0);
  EXPECT_GT(e["cluster"]["optimizer"].get<double>(), 0);
  EXPECT_GT(e["cluster"]["swarmx"].get<double>(), 0);
  EXPECT_GT(e["system"]["edge_io"].get<double>(), 0);
  ASSERT_EQ(e["steps"].size(), 2u);
  const double sum = e["steps"]["step0"]["energy"].get<double>() + e["steps"]["step1"]["energy"].get<double>();
  EXPECT_NEAR(sum, e["total"].get<double>(), 1e-12 * e["total"].get<double>());
  EXPECT_DOUBLE_EQ(e["per_sample"].get<double>(), e["total"].get<double>() / s["training"]["samples"].get<double>());
}

// The replay: each of the two wafers runs every program once per step, so the recorded wafer
// run's lanes count four times.
TEST(Energy, TrainingStepsAndSamples) {
  test::TempDir dir;
  const json s = run(dir, "t", "train tiny-cluster --model tiny-mlp --steps 2 --cluster-model replay");
  ASSERT_TRUE(s["training"].contains("wafer_run"));
  expect_training_energy(s);
  const double one = lane_joules(s["training"]["wafer_run"]["cores"]["lane_ops"]);
  EXPECT_GT(one, 0);
  EXPECT_NEAR(s["energy"]["wafer"]["lanes"].get<double>(), 4 * one, 1e-9 * one);
}

// Co-simulated: the wafers' own counters, every step of each, priced once (no recorded run).
TEST(Energy, CosimulatedTrainingCountsEveryWafersOwnWork) {
  test::TempDir dir;
  const json s = run(dir, "t", "train tiny-cluster --model tiny-mlp --steps 2");
  EXPECT_FALSE(s["training"].contains("wafer_run"));
  expect_training_energy(s);
  const double w0 = lane_joules(s["cluster"]["wafer0"]["cores"]["lane_ops"]);
  const double w1 = lane_joules(s["cluster"]["wafer1"]["cores"]["lane_ops"]);
  EXPECT_GT(w0, 0);
  EXPECT_DOUBLE_EQ(w0, w1);  // the same programs on both wafers, timing only
  EXPECT_NEAR(s["energy"]["wafer"]["lanes"].get<double>(), w0 + w1, 1e-9 * w0);
}

TEST(Energy, WindowsAddUpToTheRunsEnergy) {
  test::TempDir dir;
  const json s = run(dir, "w", "exec tiny " + kStream + " --trace windows,timeline --trace-window 4");
  const auto meta = json::parse(slurp(dir.path() / "w" / "trace" / "meta.json"));
  ASSERT_TRUE(meta["energy"]["recorded"].get<bool>());
  std::ifstream in(dir.path() / "w" / "trace" / "energy-w0.csv");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "window,x,y,compute,sram,fabric,total");
  double compute = 0, sram = 0, fabric = 0;
  int rows = 0;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string f[7];
    for (auto& v : f) std::getline(ss, v, ',');
    compute += std::stod(f[3]);
    sram += std::stod(f[4]);
    fabric += std::stod(f[5]);
    EXPECT_EQ(std::stod(f[6]), std::stod(f[3]) + std::stod(f[4]) + std::stod(f[5]));
    ++rows;
  }
  ASSERT_GT(rows, 0);
  const json& w = s["energy"]["wafer"];
  const double tol = rows * 0.5;  // fJ: each row rounds each column
  EXPECT_NEAR(compute,
              (w["lanes"].get<double>() + w["instructions"].get<double>() + w["active_cycles"].get<double>()) * 1e15,
              tol);
  EXPECT_NEAR(sram, w["sram"].get<double>() * 1e15, tol);
  EXPECT_NEAR(fabric, (w["router"].get<double>() + w["link"].get<double>() + w["ramp"].get<double>()) * 1e15, tol);
  // The power counter on the timeline.
  EXPECT_NE(slurp(dir.path() / "w" / "trace" / "timeline.json").find("\"power (W)\""), std::string::npos);
}

TEST(Energy, PresetsPeakWithinTwentyPercentOfThePublishedSystemPower) {
  // CS-2 and CS-3: about 23 kW per system (docs/energy.md, "Calibration").
  for (const char* name : {"wse2", "wse3"}) {
    const auto p = platforms::load_platform(name);
    const auto f = platforms::figures(p.spec);
    EXPECT_NEAR(f.peak_power_system_w, 23e3, 0.2 * 23e3) << name;
    EXPECT_GT(f.peak_power_wafer_w, 0.5 * f.peak_power_system_w) << name;
  }
}

TEST(Energy, InfoPrintsThePeakPower) {
  const auto r = wafersim("info wse2");
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("peak power (wafer / system)"), std::string::npos) << r.out;
  const auto j = json::parse(wafersim("info wse3 --json").out);
  EXPECT_GT(j["peak_power_w"]["system"].get<double>(), j["peak_power_w"]["wafer"].get<double>());
}

TEST(Energy, BadCoefficientsNameFileLineAndKey) {
  test::TempDir dir;
  const auto path = dir.write("bad.yaml", "base: tiny\nenergy:\n  pe:\n    static: 2 pJ\n");
  const auto r = wafersim("validate " + path, true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("bad.yaml:4:15: error: energy.pe.static: unknown unit 'pJ' for a power"), std::string::npos)
      << r.out;
}

TEST(Energy, UnitsOfEnergyAndPower) {
  using units::Dimension;
  EXPECT_EQ(units::parse("0.4 pJ", Dimension::Energy).value, 0.4e-12);
  EXPECT_EQ(units::parse("375 fJ", Dimension::Energy).value, 375e-15);
  EXPECT_EQ(units::parse("2 mW", Dimension::Power).value, 2e-3);
  EXPECT_EQ(units::parse("23 kW", Dimension::Power).value, 23e3);
  EXPECT_EQ(units::parse("500 uW", Dimension::Power).value, 500e-6);
  EXPECT_FALSE(units::parse("2 pW/s", Dimension::Power).ok);
  EXPECT_FALSE(units::parse("3", Dimension::Energy).ok);
  EXPECT_FALSE(units::parse("3 W", Dimension::Energy).ok);
  EXPECT_EQ(units::format(units::Energy{0.375e-12}), "375 fJ");
  EXPECT_EQ(units::format(units::Energy{1.15e-12}), "1.15 pJ");
  EXPECT_EQ(units::format(units::Power{1.5e3}), "1.5 kW");
  EXPECT_EQ(units::format(units::Power{0.5e-3}), "500 uW");
  for (double v : {0.1e-12, 17.5e-12, 6e-9, 312.5e-15, 1e-6})
    EXPECT_EQ(units::parse(units::format(units::Energy{v}), Dimension::Energy).value, v);
}

}  // namespace
}  // namespace wafersim::energy::energy_test

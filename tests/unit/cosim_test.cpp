// The co-simulated cluster (platforms/cluster.h, platforms/edge/wafer_edge.h,
// platforms/training/cosim_wafer.h): the wafer's edge at and over the system's I/O limit,
// back-pressure from a slow SwarmX link into the wafers' fabric, the co-simulation equal to
// the replay where the replay's assumptions hold, the same statistics for any thread count,
// and the wafers' own gradients equal to the replay of the programs' arithmetic bit for bit.

#include <gtest/gtest.h>

#include <systemc>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fabric/mesh.h"
#include "fabric/route_loader.h"
#include "models/compiler/compiler.h"
#include "models/model_spec.h"
#include "platforms/edge/wafer_edge.h"
#include "platforms/platform_spec.h"
#include "platforms/training/training_run.h"
#include "platforms/training/wafer_times.h"
#include "sim/child_process.h"
#include "sim/errors.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"
#include "tests/support/training_bits.h"

namespace wafersim::platforms::training::cosim_test {
namespace {
using fabric::EdgeSide;
using sim::Cycle;

// A mesh whose rows carry color 1 from each west edge channel straight to the east one, and
// the wafer's edge endpoint serving it with the I/O limit `ports` x 32 Gb/s at 1 GHz: exactly
// `ports` wavelets per cycle each way.
struct EdgeRig {
  explicit EdgeRig(std::uint32_t ports)
      : geometry(8, 8, 8),
        engine("engine", sim::EngineOptions{units::Frequency{1e9}, true, Cycle::never(), true}),
        mesh(config(), geometry, options(), &engine),
        edge("edge", edge_config(ports), mesh, engine, stats) {}
  static fabric::FabricConfig config() {
    fabric::FabricConfig c;
    c.colors = 24;
    c.queue_depth = 8;
    c.edge_io_channels = 8;
    c.deadlock_timeout = Cycle(1000);
    return c;
  }
  fabric::MeshOptions options() const {
    fabric::MeshOptions o;
    o.routing = fabric::Routing::Static;
    o.routes = std::make_shared<fabric::RouteTable>(fabric::parse_routes(
        "routes:\n  - {color: 1, x: 0..7, y: 0..7, from: west, to: east}\n", "rows.yaml", geometry, 24));
    return o;
  }
  static edge::WaferEdgeConfig edge_config(std::uint32_t ports) {
    edge::WaferEdgeConfig c;
    c.io.io_ports = ports;
    c.io.io_port_bandwidth = units::Bandwidth{32e9};
    c.io.edge_io_channels = 8;
    c.io.channel_bandwidth = units::Bandwidth{32e9};
    c.io.planes = 1;
    c.clock_hz = 1e9;
    return c;
  }
  // `channels` streams of `n` wavelets in, the same out.
  void begin(std::uint32_t channels, std::uint32_t n) {
    std::vector<edge::InStream> in;
    std::vector<edge::OutStream> out;
    for (std::uint32_t c = 0; c < channels; ++c) {
      edge::InStream s;
      s.side = EdgeSide::West;
      s.channel = c;
      s.color = hw::Color(1);
      for (std::uint32_t k = 0; k < n; ++k) s.payloads.push_back(c * 1000 + k);
      in.push_back(std::move(s));
      edge::OutStream o;
      o.side = EdgeSide::East;
      o.channel = c;
      o.color = hw::Color(1);
      o.expected = n;
      out.push_back(std::move(o));
    }
    edge.begin(std::move(in), std::move(out));
  }
  void run_to(std::uint64_t end) {
    while (engine.step(Cycle(end))) {
    }
  }
  sim::stats::Group stats{""};
  fabric::MeshGeometry geometry;
  sim::Engine engine;
  fabric::Mesh mesh;
  edge::WaferEdge edge;
};

// 4 channels of 100 wavelets at a limit of exactly 4 per cycle: every cycle sends one wavelet
// on every channel, all 400 by the end of cycle 99, never held by the limit.
TEST(WaferEdge, AStreamAtTheIoLimitIsNeverHeld) {
  EdgeRig rig(4);
  rig.begin(4, 100);
  rig.run_to(99);
  EXPECT_EQ(rig.edge.wavelets_sent(), 396u);
  rig.run_to(100);
  EXPECT_EQ(rig.edge.wavelets_sent(), 400u);
  rig.run_to(1000);
  EXPECT_TRUE(rig.edge.done()) << rig.edge.pending();
  EXPECT_EQ(rig.edge.counters().io_limited_in, 0u);
  EXPECT_EQ(rig.edge.counters().io_limited_out, 0u);
  for (std::uint32_t c = 0; c < 4; ++c)
    for (std::uint32_t k = 0; k < 100; ++k) ASSERT_EQ(rig.edge.outputs()[c].received[k], c * 1000 + k);
}

// One wavelet per cycle over it (5 channels, limit 4): exactly 4 go in every cycle, so 500
// take 125 cycles; the limit's share rotates, so every channel finishes in the last one and a
// channel is held back in each of the 124 before it. The same 4 per cycle come out at the
// east edge (the rows' latency later), never more than the limit there.
TEST(WaferEdge, OneWaveletPerCycleOverTheIoLimitWaits) {
  EdgeRig rig(4);
  rig.begin(5, 100);
  rig.run_to(20);
  const std::uint64_t out20 = rig.edge.wavelets_received();
  rig.run_to(120);
  EXPECT_EQ(rig.edge.wavelets_received() - out20, 400u);
  rig.run_to(124);
  EXPECT_EQ(rig.edge.wavelets_sent(), 496u);
  rig.run_to(125);
  EXPECT_EQ(rig.edge.wavelets_sent(), 500u);
  rig.run_to(1000);
  EXPECT_TRUE(rig.edge.done()) << rig.edge.pending();
  EXPECT_EQ(rig.edge.counters().io_limited_in, 124u);
  EXPECT_EQ(rig.edge.counters().io_limited_out, 0u);
  EXPECT_EQ(rig.edge.wavelets_received(), 500u);
}

// What a training run reports, from a child process (a fresh SystemC kernel per run).
nlohmann::json train(const std::string& platform, const std::vector<std::string>& set, TrainingConfig cfg,
                     const std::string& model = "tiny-mlp") {
  return sim::run_in_child(
      [&] {
        const auto spec = load_platform(platform, set).spec;
        const auto m = models::load_model(model).spec;
        sim::stats::Group root("");
        const TrainingReport r = run_training(spec, m, cfg, root);
        nlohmann::json j = to_json(r);
        auto stat = [&](const std::string& path) {
          const auto* s = root.find(path);
          return s ? s->value() : -1.0;
        };
        double fabric_in = 0, starved = 0;
        for (std::uint32_t e = 0; e < r.wafers; ++e) {
          fabric_in += stat(fmt::format("cluster.wafer{}.cores.stall.fabric_in", e));
          starved += stat(fmt::format("cluster.wafer{}.edge.starved", e));
        }
        j["fabric_in"] = fabric_in;
        j["starved"] = starved;
        j["starved0"] = stat("cluster.wafer0.edge.starved");
        if (cfg.functional) {
          j["final_bits"] = test::final_weight_bits(r);
        }
        return j;
      },
      "a training run");
}

TrainingConfig cosim(std::uint32_t steps, unsigned threads = 1) {
  TrainingConfig cfg;
  cfg.cluster = ClusterMode::Cosim;
  cfg.steps = steps;
  cfg.threads = threads;
  return cfg;
}

// A SwarmX link 100 times slower (1 Gb/s): the weights reach the wafers slowly, the PEs wait
// at their fabric inputs and the step takes over ten times longer. The edge's starved cycles
// (a program's streams waiting for weights, nothing sent) are exactly the cycles the programs
// waited for their first weights (tiny-mlp's layers are one chunk each: no wait mid-stream).
TEST(Cosim, ASlowSwarmXLinkStallsTheWafersFabricInputs) {
  const auto fast = train("tiny-cluster", {}, cosim(1));
  const auto slow = train("tiny-cluster", {"swarmx.port_bandwidth=1 Gb/s"}, cosim(1));
  const double t_fast = fast["steps"][0]["time_ps"].get<double>(), t_slow = slow["steps"][0]["time_ps"].get<double>();
  EXPECT_GT(t_slow, 10 * t_fast);
  EXPECT_GT(slow["fabric_in"].get<double>(), 10 * fast["fabric_in"].get<double>());
  for (const auto* run : {&fast, &slow}) {
    double waits = 0;
    for (const auto& w : (*run)["program_waits"][0]) waits += w.get<double>();
    EXPECT_EQ((*run)["starved0"].get<double>(), waits);
  }
  EXPECT_GT(slow["starved0"].get<double>(), 20 * fast["starved0"].get<double>());
}

// One wafer, links without limit (I/O ports and SwarmX at 1 Pb/s, 10 ns of latency): every program
// takes, from its first wavelet in, the cycles it takes on a wafer of its own (the replay's
// measurement), in both steps. The first program is one cycle shorter: its PEs started their
// task while they waited for the weights, where the replay's wafer run sends the first
// wavelet in the cycle they start.
TEST(Cosim, OneWaferWithUnlimitedLinksRunsEveryProgramAsAlone) {
  const std::vector<std::string> set = {"cluster.systems=1", "system.io_port_bandwidth=1 Pb/s",
                                        "swarmx.port_bandwidth=1 Pb/s", "system.edge_latency=10 ns"};
  const auto co = train("tiny-cluster", set, cosim(2));
  const nlohmann::json alone = sim::run_in_child(
      [&] {
        const auto spec = load_platform("tiny-cluster", set).spec;
        models::compiler::CompileOptions o;
        o.training = true;
        const auto cm = models::compiler::compile(models::load_model("tiny-mlp").spec,
                                                  models::compiler::Target{spec.wafer, spec.fabric}, o);
        nlohmann::json j = nlohmann::json::array();
        for (const auto& p : simulate_programs(spec, cm, 1, false).programs) j.push_back(p.cycles);
        return j;
      },
      "the wafer run");
  ASSERT_EQ(co["program_cycles"].size(), 2u);
  nlohmann::json want = alone;
  want[0] = alone[0].get<std::uint64_t>() - 1;
  for (const auto& step : co["program_cycles"]) EXPECT_EQ(step, want);
}

// stats.json byte for byte with 1, 2, 3 and 4 host threads for 4 wafers (3: a thread runs two;
// 4 oversubscribe the 2 cores a test may have).
TEST(Cosim, StatisticsAreTheSameForAnyThreadCount) {
  test::TempDir dir;
  std::string first;
  for (const char* threads : {"1", "2", "3", "4"}) {
    const auto out = dir.path() / threads;
    const auto r = test::wafersim(
        "train tiny-cluster --set cluster.systems=4 --model tiny-mlp --steps 2 --functional "
        "--threads " +
            std::string(threads) + " --out " + out.string(),
        true);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find(std::string("cluster model cosim")), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(std::string(threads) + " host thread"), std::string::npos) << r.out;
    const std::string stats = test::slurp(out / "stats.json");
    ASSERT_FALSE(stats.empty());
    if (first.empty())
      first = stats;
    else
      EXPECT_EQ(stats, first) << threads << " threads";
  }
}

// Any window within the lookahead gives the same run: a third of the edge latency makes three
// times the windows and the same step times and program cycles, wafer by wafer.
TEST(Cosim, AShorterWindowGivesTheSameRun) {
  const auto whole = train("tiny-cluster", {}, cosim(2, 2));
  TrainingConfig third = cosim(2, 2);
  third.window = sim::Picos(100000 / 3);
  const auto short_windows = train("tiny-cluster", {}, third);
  EXPECT_GT(short_windows["windows"].get<std::uint64_t>(), 2 * whole["windows"].get<std::uint64_t>());
  EXPECT_EQ(short_windows["steps"], whole["steps"]);
  EXPECT_EQ(short_windows["program_cycles"], whole["program_cycles"]);
  EXPECT_EQ(short_windows["program_waits"], whole["program_waits"]);
  EXPECT_EQ(short_windows["fabric_in"], whole["fabric_in"]);
}

// The wafers' own gradients: 2 wafers, 2 steps with Adam. The co-simulation's losses and
// MemoryX's final weights equal, bit for bit, the replay whose gradients come from the same
// programs run wafer by wafer (whose distance to the host reference docs/training.md bounds).
TEST(Cosim, TheWafersGradientsEqualTheProgramsReplayBitForBit) {
  TrainingConfig cfg = cosim(2, 2);
  cfg.functional = true;
  cfg.optimizer.learning_rate = 0.05F;
  const auto co = train("tiny-cluster", {}, cfg);
  TrainingConfig rep = cfg;
  rep.cluster = ClusterMode::Replay;
  rep.arithmetic = WaferArithmetic::Programs;
  const auto replay = train("tiny-cluster", {}, rep);
  EXPECT_EQ(co["wafer_arithmetic"], "programs");
  EXPECT_GT(co["result_elements_checked"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(co["losses"], replay["losses"]);
  EXPECT_EQ(co["final_bits"], replay["final_bits"]);
}

TEST(Cosim, WhatOnlyTheReplayCanDoIsAnInputError) {
  auto fails = [](TrainingConfig cfg, const std::string& what) {
    const auto spec = load_platform("tiny-cluster").spec;
    sim::stats::Group root("");
    try {
      run_training(spec, models::load_model("tiny-mlp").spec, cfg, root);
      ADD_FAILURE() << "no error for " << what;
    } catch (const sim::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--cluster-model replay"), std::string::npos) << e.what();
    }
  };
  TrainingConfig bound = cosim(1);
  bound.timing = TimingSource::Bound;
  fails(bound, "bound timing");
  TrainingConfig host = cosim(1);
  host.functional = true;
  host.explicit_arithmetic = true;
  fails(host, "host arithmetic");
}

}  // namespace
}  // namespace wafersim::platforms::training::cosim_test

namespace wafersim::platforms::training::cosim_test {
namespace {

// --trace on a co-simulated training run: every wafer's congestion windows, the cluster's
// links, the steps and every wafer's programs as phases in one folder, on one report page.
TEST(Cosim, TrainingRunsAreTracedWithEveryWaferAndLink) {
  test::TempDir dir;
  const auto out = dir.path() / "run";
  const auto r = test::wafersim(
      "train tiny-cluster --model tiny-mlp --steps 2 --trace windows,timeline --out " + out.string(), true);
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* f : {"fabric-w0.csv", "fabric-w1.csv", "pe-w0.csv", "pe-w1.csv", "links.csv", "steps.json",
                        "phases.json", "timeline.json"})
    EXPECT_TRUE(std::filesystem::exists(out / "trace" / f)) << f;
  const auto phases = nlohmann::json::parse(test::slurp(out / "trace" / "phases.json"));
  EXPECT_EQ(phases["phases"].size(), 2u * 2u * 9u);  // wafers x steps x programs
  const std::string links = test::slurp(out / "trace" / "meta.json");
  for (const char* link : {"MemoryX to SwarmX (weights)", "to wafer1 (weights)", "wafer1 to SwarmX (gradients)"})
    EXPECT_NE(links.find(link), std::string::npos) << link;
  const auto report = test::wafersim("report " + out.string(), true);
  ASSERT_EQ(report.code, 0) << report.out;
  const std::string page = test::slurp(out / "report.html");
  EXPECT_NE(page.find("MemoryX out (weights)"), std::string::npos);
  EXPECT_NE(page.find("wafer edges out (gradients)"), std::string::npos);
}

// The sum of column `name` of a trace table (CSV with a header line).
std::uint64_t column_sum(const std::filesystem::path& csv, const std::string& name) {
  std::istringstream in(test::slurp(csv));
  std::string line;
  std::getline(in, line);
  std::vector<std::string> head;
  std::istringstream h(line);
  for (std::string f; std::getline(h, f, ',');) head.push_back(f);
  const auto col = static_cast<std::size_t>(std::find(head.begin(), head.end(), name) - head.begin());
  EXPECT_LT(col, head.size()) << name << " in " << csv;
  std::uint64_t sum = 0;
  while (std::getline(in, line)) {
    std::istringstream r(line);
    std::string f;
    for (std::size_t i = 0; i <= col && std::getline(r, f, ','); ++i) {
    }
    sum += std::stoull(f);
  }
  return sum;
}

// A SwarmX link slowed 100 times, traced: every cycle a wafer's PEs stalled at their fabric
// inputs is in their windows, and every wavelet and waiting cycle of its edge in the edge's
// windows (the weights' path between the links and the PEs), on one report page.
TEST(Cosim, TheWindowsAccountForEveryStalledCycle) {
  test::TempDir dir;
  const auto out = dir.path() / "run";
  const auto r = test::wafersim(
      "train tiny-cluster --model tiny-mlp --steps 1 --set \"swarmx.port_bandwidth=1 Gb/s\" "
      "--trace windows --out " +
          out.string(),
      true);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto stats = nlohmann::json::parse(test::slurp(out / "stats.json"))["stats"]["cluster"];
  for (int w = 0; w < 2; ++w) {
    const auto& wafer = stats[fmt::format("wafer{}", w)];
    const auto pe = out / "trace" / fmt::format("pe-w{}.csv", w);
    const auto fabric_in = wafer["cores"]["stall"]["fabric_in"].get<std::uint64_t>();
    EXPECT_GT(fabric_in, 1000000u);
    EXPECT_EQ(column_sum(pe, "stall_fabric_in"), fabric_in);
    const auto edge = out / "trace" / fmt::format("edge-w{}.csv", w);
    for (const char* c : {"wavelets_in", "wavelets_out", "starved", "fabric_blocked", "io_limited_in", "io_limited_out",
                          "held_gradients"})
      EXPECT_EQ(column_sum(edge, c), wafer["edge"][c].get<std::uint64_t>()) << c << " of wafer " << w;
    EXPECT_GT(wafer["edge"]["starved"].get<std::uint64_t>(), 0u);
  }
  const auto report = test::wafersim("report " + out.string(), true);
  ASSERT_EQ(report.code, 0) << report.out;
  const std::string page = test::slurp(out / "report.html");
  for (const char* s :
       {"wafer edges into the meshes (weights)", "meshes into wafer edges (gradients)", "held_gradients"})
    EXPECT_NE(page.find(s), std::string::npos) << s;
}

}  // namespace
}  // namespace wafersim::platforms::training::cosim_test

// A fixed fabric workload for profilers: uniform random XY traffic (the `wafersim traffic`
// defaults, WSE-2 router) on a k x k mesh; 1000 warm-up cycles, then N measured cycles.
// Under callgrind only the measured cycles are counted (instrumentation starts after the
// warm-up); prints the wavelet moves (grants) and wall time of the measured part.
//   fabric_profile [K=32] [RATE=0.1] [CYCLES=2000]
//   valgrind --tool=callgrind --instr-atstart=no build/fabric_profile 32 0.1 2000

#include <fmt/format.h>

#include <systemc>

#include <chrono>
#include <cstdlib>
#include <string>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

#include "fabric/traffic/standalone.h"

int sc_main(int argc, char* argv[]) {
  using namespace wafersim;
  const auto k = static_cast<std::uint32_t>(argc > 1 ? std::stoul(argv[1]) : 32);
  const double rate = argc > 2 ? std::stod(argv[2]) : 0.1;
  const std::uint64_t cycles = argc > 3 ? std::stoull(argv[3]) : 2000;
  fabric::FabricConfig f;  // the WSE-2 router (platforms/wse2.yaml)
  f.colors = 24;
  f.queue_depth = 8;
  f.hop_latency = sim::Cycle(1);
  f.ramp_latency = sim::Cycle(1);
  f.edge_io_channels = std::min<std::uint32_t>(60, k);
  f.deadlock_timeout = sim::Cycle(10000);
  fabric::traffic::TrafficOptions o;
  o.rate = rate;
  o.warmup = 0;
  o.measure = std::uint64_t{1} << 31;
  o.drain = 0;
  fabric::MeshOptions m;
  m.routing = fabric::Routing::XY;
  fabric::traffic::StandaloneTraffic t(f, fabric::MeshGeometry(k, k, f.edge_io_channels), m, o);
  t.step(1000);
  const std::uint64_t moves0 = t.mesh().forwarded(), visits0 = t.mesh().router_evaluations(),
                      bypassed0 = t.mesh().bypassed();
  const auto start = std::chrono::steady_clock::now();
  CALLGRIND_START_INSTRUMENTATION;
  t.step(cycles);
  CALLGRIND_STOP_INSTRUMENTATION;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::uint64_t moves = t.mesh().forwarded() - moves0;
  const std::uint64_t visits = t.mesh().router_evaluations() - visits0, bypassed = t.mesh().bypassed() - bypassed0;
  fmt::print(
      "{} x {} at {}: {} cycles, {} wavelet moves ({:.1f} per router-cycle), {:.3f} s, {:.2f} M router-cycles/s\n", k,
      k, rate, cycles, moves, static_cast<double>(moves) / (static_cast<double>(k) * k * cycles), wall,
      static_cast<double>(k) * k * cycles / wall / 1e6);
  fmt::print("  router visits {:.3f} per router-cycle; {:.1f}% of the moves granted on arrival\n",
             static_cast<double>(visits) / (static_cast<double>(k) * k * cycles),
             moves ? 100.0 * static_cast<double>(bypassed) / static_cast<double>(moves) : 0.0);
  return 0;
}

int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}

// `wafersim traffic`: synthetic traffic on one wafer's fabric; one load, or a
// latency-throughput curve over several loads (each point in its own process).

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>

#include "fabric/route_loader.h"
#include "fabric/traffic/generator.h"
#include "platforms/run_trace.h"
#include "sim/app/cli.h"
#include "sim/app/trace_args.h"
#include "sim/child_process.h"
#include "sim/errors.h"

namespace wafersim::app {
namespace {

using fabric::traffic::TrafficOptions;
using fabric::traffic::TrafficResult;

struct Point {
  TrafficResult result;
  double bound = 0;
  std::string out;
  std::string trace;  // trace folder, when traced
};

nlohmann::ordered_json point_json(const platforms::LoadedPlatform& p, const TrafficOptions& o, const Point& pt,
                                  bool static_routes) {
  const auto& r = pt.result;
  nlohmann::ordered_json j;
  j["platform"] = p.spec.name;
  j["width"] = p.spec.wafer.width;
  j["height"] = p.spec.wafer.height;
  j["routing"] = static_routes ? "static" : "xy";
  j["pattern"] = static_routes ? "routes" : o.pattern;
  j["packet_size"] = o.packet_size;
  j["colors"] = static_routes ? 0 : o.colors;
  j["queue_depth"] = p.spec.fabric.queue_depth;
  j["rate"] = o.rate;
  j["offered"] = r.offered;
  j["accepted"] = r.accepted;
  j["latency_avg"] = r.latency_avg;
  j["latency_min"] = r.latency_min;
  j["latency_p50"] = r.latency_p50;
  j["latency_p99"] = r.latency_p99;
  j["latency_max"] = r.latency_max;
  j["packets"] = r.packets;
  j["cycles"] = r.cycles;
  j["drained"] = r.drained;
  j["undelivered"] = r.undelivered;
  if (pt.bound > 0) j["bound"] = pt.bound;
  j["seed"] = o.seed;
  j["out"] = pt.out;
  if (!pt.trace.empty()) j["trace"] = pt.trace;
  return j;
}

const char* kCsvHeader =
    "pattern,packet_size,colors,queue_depth,rate,offered,accepted,latency_avg,latency_p50,latency_p99,latency_max,"
    "packets,cycles,drained";

std::string csv_line(const nlohmann::ordered_json& j) {
  return fmt::format("{},{},{},{},{},{:.6f},{:.6f},{:.3f},{},{},{},{},{},{}", j["pattern"].get<std::string>(),
                     j["packet_size"].get<std::uint64_t>(), j["colors"].get<std::uint64_t>(),
                     j["queue_depth"].get<std::uint64_t>(), j["rate"].get<double>(), j["offered"].get<double>(),
                     j["accepted"].get<double>(), j["latency_avg"].get<double>(), j["latency_p50"].get<std::uint64_t>(),
                     j["latency_p99"].get<std::uint64_t>(), j["latency_max"].get<std::uint64_t>(),
                     j["packets"].get<std::uint64_t>(), j["cycles"].get<std::uint64_t>(),
                     j["drained"].get<bool>() ? 1 : 0);
}

std::vector<double> parse_rates(const std::string& list, const std::string& sweep) {
  std::vector<double> rates;
  auto number = [](const std::string& s, const char* what) {
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || errno || *end || !std::isfinite(v))
      throw sim::InputError(fmt::format("{}: '{}' is not a number", what, s));
    return v;
  };
  if (!list.empty()) {
    std::stringstream ss(list);
    std::string item;
    while (std::getline(ss, item, ',')) rates.push_back(number(item, "--rates"));
  } else {
    std::vector<std::string> parts;
    std::stringstream ss(sweep);
    std::string item;
    while (std::getline(ss, item, ':')) parts.push_back(item);
    if (parts.size() != 3) throw sim::InputError(fmt::format("--sweep-rates '{}': expected FROM:TO:STEP", sweep));
    const double from = number(parts[0], "--sweep-rates"), to = number(parts[1], "--sweep-rates"),
                 step = number(parts[2], "--sweep-rates");
    if (step <= 0 || to < from) throw sim::InputError("--sweep-rates: expected FROM <= TO and STEP > 0");
    const auto n = static_cast<std::uint64_t>(std::floor((to - from) / step + 1e-9)) + 1;
    if (n > 1000) throw sim::InputError("--sweep-rates: more than 1000 points");
    for (std::uint64_t i = 0; i < n; ++i)
      rates.push_back(std::round((from + static_cast<double>(i) * step) * 1e9) / 1e9);
  }
  if (rates.empty()) throw sim::InputError("--rates: no rate given");
  return rates;
}

struct TrafficCommand {
  PlatformArgs platform;
  SimArgs sim;
  TraceArgs trace;
  TrafficOptions traffic;
  double rate = -1;
  std::string rates, sweep, routes_file, hotspot;

  [[nodiscard]] TrafficOptions options(double r) const {
    TrafficOptions o = traffic;
    o.rate = r;
    o.seed = sim.seed;
    if (!hotspot.empty()) {
      unsigned x = 0, y = 0;
      char tail = 0;
      if (std::sscanf(hotspot.c_str(), "%u,%u%c", &x, &y, &tail) != 2 || x > 65535 || y > 65535)
        throw sim::InputError(fmt::format("--hotspot '{}': expected X,Y", hotspot));
      o.hotspot = hw::PeCoord{static_cast<std::uint16_t>(x), static_cast<std::uint16_t>(y)};
    }
    return o;
  }

  // One load on the wafer's engine, writing a run folder.
  Point run_point(const platforms::LoadedPlatform& loaded, const TrafficOptions& o, const std::string& out,
                  bool quiet) const {
    const auto& spec = loaded.spec;
    fabric::MeshGeometry geometry(spec.wafer.width, spec.wafer.height, spec.fabric.edge_io_channels);
    platforms::BuildOptions build = sim.build_options();
    build.synthetic_traffic = true;
    if (!routes_file.empty()) {
      build.routing = fabric::Routing::Static;
      build.routes =
          std::make_shared<fabric::RouteTable>(fabric::load_routes(routes_file, geometry, spec.fabric.colors));
    } else {
      build.routing = fabric::Routing::XY;
    }
    o.validate(spec.fabric, geometry, !routes_file.empty());
    build.traffic = fabric::traffic::TrafficGenerator::expected_traffic(o, geometry, build.routing);
    const sim::trace::TraceOptions trace_options = trace.options();
    RunDir dir = RunDir::create(out, "traffic", sim.force);
    std::unique_ptr<platforms::RunTrace> tracing;
    if (trace_options.any()) {
      tracing = std::make_unique<platforms::RunTrace>(trace_options, dir.path(), spec, o.warmup + o.measure);
      tracing->configure(build);
    }
    sim::stats::Group root("");
    platforms::Wafer wafer("wafer0", spec, build, root);
    if (tracing) tracing->attach(wafer, 0);
    fabric::traffic::TrafficGenerator gen(wafer.mesh(), o, &wafer.engine());
    gen.add_stats(wafer.stats().group("traffic"));
    Progress progress("traffic", o.warmup + o.measure, "cycles", Progress::terminal() && !sim.json && !quiet);
    const sim::Engine& engine = wafer.engine();
    sim::RunOutcome outcome;
    try {
      outcome = sim::run_simulation(engine, {&engine}, sim::Cycle::never(), sim.limits(), progress,
                                    [&gen] { return gen.finished(); });
    } catch (const sim::SimulationError& e) {
      const std::string msg = e.what();
      const sim::Cycle at = engine.first_cycle_at_or_after(sc_core::sc_time_stamp());
      write_run_files(dir, loaded, root, invocation_text(), progress.elapsed_seconds(), at,
                      "simulation error: " + msg.substr(0, msg.find('\n')));
      if (tracing) tracing->finish(at);
      throw;
    }
    if (!gen.finished())
      throw std::logic_error("wafersim traffic: the simulation went idle before the traffic generator finished");
    if (!routes_file.empty() && !gen.result().drained) {
      // Static routes can deadlock: before calling the load saturating, give the watchdog one
      // timeout of its own to see whether the wavelets left still move.
      const sim::Cycle more = outcome.cycles + spec.fabric.deadlock_timeout;
      try {
        run_simulation(engine, {&engine}, more, sim.limits(), progress);
      } catch (const sim::SimulationError& e) {
        const std::string msg = e.what();
        write_run_files(dir, loaded, root, invocation_text(), progress.elapsed_seconds(), engine.cycles(),
                        "simulation error: " + msg.substr(0, msg.find('\n')));
        if (tracing) tracing->finish(engine.cycles());
        throw;
      }
    }
    write_run_files(dir, loaded, root, invocation_text(), outcome.wall_seconds, outcome.cycles, "ok");
    Point pt;
    if (tracing) {
      tracing->finish(outcome.cycles);
      pt.trace = tracing->dir().string();
    }
    pt.result = gen.result();
    pt.bound = routes_file.empty() ? gen.pattern().bound() : 0;
    pt.out = dir.path().string();
    return pt;
  }

  void print_point(const platforms::LoadedPlatform& loaded, const TrafficOptions& o, const Point& pt) const {
    const auto& r = pt.result;
    const auto& s = loaded.spec;
    if (routes_file.empty())
      std::cout << fmt::format(
          "wafersim traffic: {} ({} x {} mesh), {}, {}-wavelet packets on {} color{}, queue depth {}\n", s.name,
          s.wafer.width, s.wafer.height, o.pattern, o.packet_size, o.colors, o.colors == 1 ? "" : "s",
          s.fabric.queue_depth);
    else
      std::cout << fmt::format("wafersim traffic: {} ({} x {} mesh), static routes from {}, queue depth {}\n", s.name,
                               s.wafer.width, s.wafer.height, routes_file, s.fabric.queue_depth);
    std::cout << fmt::format("  offered       {:.4f} wavelets/node/cycle (rate {})\n", r.offered, o.rate);
    std::cout << fmt::format(
        "  accepted      {:.4f} wavelets/node/cycle{}\n", r.accepted,
        pt.bound > 0 ? fmt::format(" (XY throughput bound for {}: {:.4f})", o.pattern, pt.bound) : "");
    std::cout << fmt::format("  latency       avg {:.2f}, p50 {}, p99 {}, max {} cycles over {} measured packets\n",
                             r.latency_avg, r.latency_p50, r.latency_p99, r.latency_max, r.packets);
    std::cout << fmt::format("  cycles        {} ({})\n", r.cycles,
                             r.drained ? "every measured packet delivered"
                                       : fmt::format("drain limit reached: {} measured still undelivered; the load is "
                                                     "beyond saturation",
                                                     r.undelivered));
    std::cout << fmt::format("  output        {}/ (config.yaml, stats.json, stats.txt, run.json)\n", pt.out);
    if (!pt.trace.empty())
      std::cout << fmt::format("  trace         {}/ ('wafersim report {}' makes an HTML page of it)\n", pt.trace,
                               pt.out);
  }

  void execute() const {
    auto loaded = platform.load();
    if (rates.empty() && sweep.empty()) {
      if (rate < 0) throw sim::InputError("give --rate R (or --rates LIST / --sweep-rates FROM:TO:STEP)");
      const TrafficOptions o = options(rate);
      Point pt = run_point(loaded, o, sim.out, false);
      if (sim.json)
        std::cout << point_json(loaded, o, pt, !routes_file.empty()).dump(2) << "\n";
      else
        print_point(loaded, o, pt);
      return;
    }
    if (rate >= 0) throw sim::InputError("give either --rate or --rates/--sweep-rates, not both");
    if (!trace.out.empty())
      throw sim::InputError("--trace-out: not with several loads (each traces into its own folder)");
    if (!rates.empty() && !sweep.empty()) throw sim::InputError("give either --rates or --sweep-rates, not both");
    const std::vector<double> list = parse_rates(rates, sweep);
    for (double r : list)
      options(r).validate(
          loaded.spec.fabric,
          fabric::MeshGeometry(loaded.spec.wafer.width, loaded.spec.wafer.height, loaded.spec.fabric.edge_io_channels),
          !routes_file.empty());
    RunDir dir = sim.run_dir("traffic-sweep");
    Progress progress("sweep", list.size(), "loads", Progress::terminal() && !sim.json);
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    std::string csv = std::string(kCsvHeader) + "\n";
    if (!sim.json) std::cout << kCsvHeader << "\n" << std::flush;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const TrafficOptions o = options(list[i]);
      const std::string out = (dir.path() / fmt::format("rate-{:.4f}", list[i])).string();
      nlohmann::ordered_json j = run_in_child(loaded, o, out);
      csv += csv_line(j) + "\n";
      if (!sim.json) std::cout << csv_line(j) << "\n" << std::flush;
      points.push_back(std::move(j));
      progress.update(i + 1);
    }
    progress.finish();
    dir.write("curve.csv", csv);
    if (sim.json)
      std::cout << points.dump(2) << "\n";
    else
      std::cerr << fmt::format("wafersim traffic: curve written to {}\n", (dir.path() / "curve.csv").string());
  }

  // Runs one point in a child process (a fresh SystemC kernel) and returns its JSON; an error
  // names the rate it stopped at.
  nlohmann::ordered_json run_in_child(const platforms::LoadedPlatform& loaded, const TrafficOptions& o,
                                      const std::string& out) const {
    try {
      return sim::run_in_child(
          [&] { return point_json(loaded, o, run_point(loaded, o, out, true), !routes_file.empty()); },
          fmt::format("the traffic run at rate {}", o.rate));
    } catch (const sim::Error& e) {
      throw sim::Error(e.exit_code(), fmt::format("the sweep stopped at rate {}: {}", o.rate, e.what()));
    }
  }
};

}  // namespace

void add_traffic_command(CLI::App& app) {
  auto cmd = std::make_shared<TrafficCommand>();
  CLI::App* sub = app.add_subcommand(
      "traffic",
      "synthetic traffic on one wafer's fabric: offered vs accepted load and packet latency, for one load or a "
      "latency-throughput curve");
  cmd->platform.add(*sub, "");
  cmd->sim.add(*sub);
  cmd->trace.add(*sub);
  const auto& names = fabric::traffic::Pattern::names();
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  sub->add_option("--pattern", cmd->traffic.pattern, "destination pattern: " + list)->capture_default_str();
  sub->add_option("--rate", cmd->rate, "offered load in wavelets per node per cycle (0 .. 1)")
      ->check(number_at_least(0.0, "a load in wavelets per node per cycle"));
  sub->add_option("--rates", cmd->rates, "several loads, e.g. 0.05,0.1,0.2: writes the latency-throughput curve as CSV")
      ->type_name("LIST");
  sub->add_option("--sweep-rates", cmd->sweep, "loads FROM to TO (inclusive) in steps of STEP, as --rates")
      ->type_name("FROM:TO:STEP");
  sub->add_option("--packet-size", cmd->traffic.packet_size, "wavelets per packet (wormhole switched)")
      ->capture_default_str();
  sub->add_option("--colors", cmd->traffic.colors,
                  "colors 0 .. N-1 used as virtual channels (a packet takes one with a free slot at injection)")
      ->capture_default_str();
  sub->add_option("--hotspot", cmd->hotspot, "hotspot pattern: the hot router (default 0,0)")->type_name("X,Y");
  sub->add_option("--hotspot-fraction", cmd->traffic.hotspot_fraction,
                  "hotspot pattern: share of packets sent to the hot router (the rest uniform)")
      ->capture_default_str();
  sub->add_option("--warmup", cmd->traffic.warmup, "cycles before the measurement window")->capture_default_str();
  sub->add_option("--measure", cmd->traffic.measure,
                  "measurement window in cycles: load is counted and packets created in it are timed")
      ->capture_default_str();
  sub->add_option("--drain", cmd->traffic.drain,
                  "at most this many cycles after the window for the measured packets to arrive (beyond saturation "
                  "they do not: the result says drained false)")
      ->capture_default_str();
  sub->add_option("--routes", cmd->routes_file,
                  "static color routes (docs/routes.md) instead of XY packets: every PE whose route accepts a color "
                  "from its ramp sends single wavelets on it")
      ->type_name("FILE");
  sub->footer(
      "Packets are switched by dimension-ordered (XY) wormhole routing, colors acting as virtual channels.\n"
      "Latency runs from a packet's creation (sources queue without bound) to the ejection of its tail.\n"
      "--json prints offered, accepted, latency_avg, latency_p50, latency_p99, latency_max, cycles, packets, ...\n"
      "With --rates or --sweep-rates each load runs in its own process and folder (OUT/rate-R/); the curve\n"
      "goes to stdout and OUT/curve.csv as CSV (or a JSON array with --json).\n"
      "Examples:\n"
      "  wafersim traffic tiny --pattern uniform --rate 0.3 --json\n"
      "  wafersim traffic tiny --pattern transpose --sweep-rates 0.02:0.2:0.02\n"
      "  wafersim traffic tiny --routes ring.yaml --rate 0.5     static routes; a deadlock exits with code 3\n"
      "  wafersim traffic tiny --pattern hotspot --hotspot 5,2 --rate 0.2 --trace windows,timeline -o hot\n"
      "  wafersim report hot                                       HTML page of the congestion windows");
  sub->callback([cmd] { cmd->execute(); });
}

}  // namespace wafersim::app

#include "platforms/run_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <stdexcept>

#include "sim/errors.h"

namespace wafersim::platforms {
namespace {

using sim::Picos;
using sim::trace::Arg;
using sim::trace::Rect;

// Slices that may overlap, spread over as few tracks ("name", "name 2", ...) as needed so
// that slices on one track follow each other.
struct Span {
  Picos start, end;
  std::string name;
  sim::trace::Args args;
};
void lanes(sim::trace::Timeline& t, const std::string& process, const std::string& thread, const std::string& category,
           std::vector<Span> spans) {
  std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
  std::vector<Picos> free_at;
  std::vector<sim::trace::TrackId> tracks;
  for (const Span& s : spans) {
    std::size_t lane = 0;
    while (lane < free_at.size() && free_at[lane] > s.start) ++lane;
    if (lane == free_at.size()) {
      free_at.push_back(Picos(0));
      tracks.push_back(t.track(process, lane == 0 ? thread : fmt::format("{} {}", thread, lane + 1)));
    }
    free_at[lane] = s.end;
    t.slice(tracks[lane], s.name, category, s.start, s.end, s.args);
  }
}

}  // namespace

RunTrace::RunTrace(const sim::trace::TraceOptions& options, const std::filesystem::path& run_dir,
                   const PlatformSpec& spec, std::uint64_t expected_cycles)
    : spec_(spec) {
  const std::uint32_t w = spec.wafer.width, h = spec.wafer.height;
  if (options.region) sim::trace::check_inside(*options.region, w, h, "--trace-region");
  std::uint64_t probed = 0;
  for (const Rect& r : options.pes) {
    sim::trace::check_inside(r, w, h, "--trace-pes");
    probed += r.size();
  }
  if (options.vcd && options.pes.empty())
    throw sim::InputError("--trace vcd: select the routers to probe with --trace-pes X,Y or X0,Y0:X1,Y1");
  if (options.vcd && probed > sim::trace::TraceOptions::kMaxProbedRouters)
    throw sim::InputError(fmt::format("--trace-pes: {} routers selected; VCD probes at most {}", probed,
                                      sim::trace::TraceOptions::kMaxProbedRouters));
  const Rect area = options.region ? *options.region : Rect{0, 0, w - 1, h - 1};
  by_color_ =
      options.windows &&
      (options.by_color == sim::trace::ByColor::On ||
       (options.by_color == sim::trace::ByColor::Auto && area.size() <= sim::trace::TraceOptions::kAutoColorRouters));
  const std::uint64_t window =
      options.window_cycles ? options.window_cycles : sim::trace::auto_window_cycles(expected_cycles);
  const std::filesystem::path dir = options.out.empty() ? run_dir / "trace" : std::filesystem::path(options.out);
  recorder_ = std::make_unique<sim::trace::Recorder>(options, dir, spec.wafer.clock, window);
  auto& meta = recorder_->meta();
  meta["platform"] = spec.name;
  meta["selection"] = {{"region", options.region ? options.region->str() : "all"}, {"pes", nlohmann::json::array()}};
  for (const Rect& r : options.pes) meta["selection"]["pes"].push_back(r.str());
  meta["fabric"] = nlohmann::ordered_json::array();
  // The PE cores' samplers fill these when a wafer with programs is attached.
  meta["pe"] = {{"recorded", false},
                {"reason", "this run simulated no PE cores (model endpoints stand in for the wafers)"}};
  meta["sram"] = meta["pe"];
  meta["energy"] = {{"recorded", false}, {"reason", "energy windows need a simulated wafer and --trace windows"}};
}

RunTrace::~RunTrace() = default;

void RunTrace::configure(BuildOptions& build) const {
  if (!recorder_->options().windows && !recorder_->options().timeline) return;
  build.trace_counters = by_color_ ? fabric::StatsDetail::Links : fabric::StatsDetail::Routers;
}

void RunTrace::attach(Wafer& wafer, std::uint32_t index) {
  const auto& o = recorder_->options();
  const std::uint32_t w = spec_.wafer.width, h = spec_.wafer.height;
  engines_.push_back(&wafer.engine());
  if (o.windows || o.timeline) {
    auto& source = recorder_->add_source();
    wafer.engine().add_observer(&source);
    sources_[index] = &source;
    {
      samplers_.push_back(std::make_unique<fabric::trace::MeshWindowSampler>(
          wafer.mesh(), index, *recorder_, o.region ? *o.region : Rect{0, 0, w - 1, h - 1}, by_color_));
      source.add_producer(samplers_.back().get());
    }
    // Before the cores' sampler, which writes a timeline counter in every window it closes:
    // the energy sampler writes at most one in a run of skipped windows, at its first, so
    // the timeline's order does not depend on idle skipping.
    energy_samplers_.push_back(std::make_unique<energy::EnergyWindowSampler>(
        wafer.cores(), wafer.mesh(), spec_.energy,
        energy::Scale{spec_.wafer.pe.sram.port_width.bytes(), spec_.wafer.pe_count()}, index, *recorder_,
        o.region ? *o.region : Rect{0, 0, w - 1, h - 1}));
    source.add_producer(energy_samplers_.back().get());
    core_samplers_.push_back(std::make_unique<hw::trace::CoreWindowSampler>(
        wafer.cores(), index, *recorder_, o.region ? *o.region : Rect{0, 0, w - 1, h - 1}));
    source.add_producer(core_samplers_.back().get());
  }
  if (o.timeline && !o.pes.empty()) {
    core_timelines_.push_back(std::make_unique<hw::trace::CoreTimeline>(*recorder_, index));
    for (const Rect& r : o.pes)
      for (std::uint32_t y = r.y0; y <= r.y1; ++y)
        for (std::uint32_t x = r.x0; x <= r.x1; ++x)
          wafer.cores().observe(hw::PeCoord{static_cast<std::uint16_t>(x), static_cast<std::uint16_t>(y)},
                                core_timelines_.back().get());
  }
  if (o.vcd) {
    std::vector<std::uint32_t> routers;
    for (const Rect& r : o.pes)
      for (std::uint32_t y = r.y0; y <= r.y1; ++y)
        for (std::uint32_t x = r.x0; x <= r.x1; ++x) routers.push_back(wafer.mesh().geometry().router(x, y));
    std::sort(routers.begin(), routers.end());
    routers.erase(std::unique(routers.begin(), routers.end()), routers.end());
    probes_.push_back(std::make_unique<fabric::trace::RouterProbe>(wafer.mesh(), wafer.engine(), *recorder_->vcd(),
                                                                   std::move(routers), fmt::format("wafer{}", index)));
  }
}

void RunTrace::attach(Cluster& cluster) {
  if (!recorder_->options().windows && !recorder_->options().timeline) return;
  links_ = std::make_unique<sim::trace::LinkTracer>(*recorder_);
  auto& sx = cluster.swarmx();
  const std::uint32_t planes = sx.planes(), levels = sx.levels();
  std::map<const sim::stream::ChunkOutPort*, std::uint32_t> leaf;  // port -> endpoint (lookup only)
  for (std::uint32_t e = 0; e < cluster.endpoint_count(); ++e)
    for (std::uint32_t p = 0; p < planes; ++p) leaf[&sx.leaf_out(e, p)] = e;
  for (std::uint32_t p = 0; p < planes; ++p) {
    links_->attach(cluster.memoryx().stream_out(p), "memoryx", fmt::format("p{} MemoryX to SwarmX (weights)", p));
    links_->attach(sx.root_out(p), "memoryx", fmt::format("p{} SwarmX to MemoryX (gradients)", p));
    for (std::uint32_t l = 0; l < levels; ++l)
      for (std::uint32_t i = 0; i < sx.width(l); ++i) {
        auto& node = sx.node(p, l, i);
        for (std::uint32_t c = 0; c < node.children(); ++c) {
          auto& port = node.down_out(c);
          auto it = leaf.find(&port);
          links_->attach(port, "swarmx",
                         it != leaf.end() ? fmt::format("p{} switch {}.{} to wafer{} (weights)", p, l, i, it->second)
                                          : fmt::format("p{} switch {}.{} to switch {}.{} (weights)", p, l, i, l + 1,
                                                        i * sx.config().arity() + c));
        }
        if (l > 0) links_->attach(node.up_out(), "swarmx", fmt::format("p{} switch {}.{} up (gradients)", p, l, i));
      }
    for (std::uint32_t e = 0; e < cluster.endpoint_count(); ++e)
      links_->attach(cluster.endpoint(e).gradients_out(p), "edge",
                     fmt::format("p{} wafer{} to SwarmX (gradients)", p, e));
  }
  if (!recorder_->options().windows) return;
  if (!cluster.cosimulated()) {
    recorder_->meta()["edge"] = {{"recorded", false},
                                 {"reason", "the replay: model endpoints stand in for the wafers and their edges"}};
    return;
  }
  for (std::uint32_t e = 0; e < cluster.wafer_count(); ++e) {
    auto it = sources_.find(e);
    if (it == sources_.end()) throw std::logic_error("RunTrace: a cluster's wafers are attached before the cluster");
    edge_samplers_.push_back(std::make_unique<EdgeWindowSampler>(cluster.wafer_edge(e), e, *recorder_));
    it->second->add_producer(edge_samplers_.back().get());
  }
}

void RunTrace::record_steps(const Cluster& cluster, const StepTimeline& timeline) {
  {
    const auto path = recorder_->dir() / "steps.json";
    nlohmann::ordered_json j;
    j["format"] = "wafersim-steps/1";
    j["steps"] = to_json(timeline);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << j.dump(1) << "\n";
    if (!out) throw sim::InputError(fmt::format("cannot write {}", path.string()));
    recorder_->meta()["steps"] = {{"file", "steps.json"}, {"count", timeline.steps.size()}};
  }
  sim::trace::Timeline* t = recorder_->timeline();
  if (!t) return;
  const auto& mx = cluster.memoryx();
  std::vector<Span> streams, gradients, updates;
  for (const auto& s : mx.streams()) {
    if (s.first_issue.is_never() || s.last_sent.is_never()) continue;
    streams.push_back(Span{s.first_issue,
                           s.last_sent,
                           fmt::format("L{} {}", s.layer, sim::stream::to_string(s.pass)),
                           {Arg::num("step", s.step), Arg::num("layer", s.layer), Arg::num("chunks", s.chunks),
                            Arg::str("tier", s.flash ? "flash" : "dram")}});
  }
  for (const auto& g : mx.gradients())
    if (!g.first_arrival.is_never() && !g.complete.is_never())
      gradients.push_back(Span{g.first_arrival,
                               g.complete,
                               fmt::format("L{} gradient", g.layer),
                               {Arg::num("step", g.step), Arg::num("layer", g.layer)}});
  for (const auto& u : mx.updates())
    updates.push_back(Span{
        u.start, u.end, fmt::format("L{} update", u.layer), {Arg::num("step", u.step), Arg::num("layer", u.layer)}});
  lanes(*t, "MemoryX", "weight streams", "memoryx", std::move(streams));
  lanes(*t, "MemoryX", "gradients written", "memoryx", std::move(gradients));
  lanes(*t, "MemoryX", "optimizer", "memoryx", std::move(updates));

  // Layer phases and steps: the intervals of the step timeline by activity.
  std::map<Activity, std::vector<Span>> by_kind;
  for (const auto& i : timeline.intervals) {
    const std::string what = to_string(i.kind);
    by_kind[i.kind].push_back(Span{i.start,
                                   i.end,
                                   i.kind == Activity::Compute ? what : fmt::format("L{} {}", i.layer, what),
                                   {Arg::num("step", i.step), Arg::num("layer", i.layer)}});
  }
  for (auto& [kind, spans] : by_kind) lanes(*t, "Training steps", to_string(kind), "phase", std::move(spans));
  std::vector<Span> steps;
  for (const auto& s : timeline.steps) {
    sim::trace::Args args{Arg::num("time_us", static_cast<double>(s.duration().count()) / 1e6)};
    for (std::size_t k = 0; k < kActivities; ++k)
      args.push_back(Arg::num(std::string("exposed_") + to_string(static_cast<Activity>(k)) + "_us",
                              static_cast<double>(s.exposed[k].count()) / 1e6));
    steps.push_back(Span{s.start, s.end, fmt::format("step {}", s.step), std::move(args)});
  }
  lanes(*t, "Training steps", "steps", "step", std::move(steps));
}

void RunTrace::phase(std::uint32_t wafer, std::string name, sim::Cycle start, sim::Cycle end, sim::trace::Args args) {
  if (end < start) throw std::logic_error("RunTrace::phase: a phase ends before it starts");
  phases_.push_back(Phase{wafer, std::move(name), start, end, std::move(args)});
}

std::vector<std::string> RunTrace::finish(sim::Cycle end) {
  for (const sim::Engine* e : engines_) end = std::max(end, e->cycles());
  if (!phases_.empty()) {
    std::stable_sort(phases_.begin(), phases_.end(), [](const Phase& a, const Phase& b) {
      return a.wafer != b.wafer ? a.wafer < b.wafer : a.start < b.start;
    });
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    std::map<std::uint32_t, std::vector<Span>> spans;
    for (const Phase& p : phases_) {
      rows.push_back({{"wafer", p.wafer}, {"name", p.name}, {"start", p.start.count()}, {"end", p.end.count()}});
      sim::trace::Args args = p.args;
      args.push_back(Arg::num("start_cycle", static_cast<double>(p.start.count())));
      args.push_back(Arg::num("cycles", static_cast<double>((p.end - p.start).count())));
      spans[p.wafer].push_back(Span{recorder_->time_of(p.start), recorder_->time_of(p.end), p.name, std::move(args)});
    }
    if (sim::trace::Timeline* t = recorder_->timeline())
      for (auto& [wafer, list] : spans)
        lanes(*t, fmt::format("wafer{} layers", wafer), "phases", "phase", std::move(list));
    const auto path = recorder_->dir() / "phases.json";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << nlohmann::ordered_json{{"format", "wafersim-phases/1"}, {"phases", rows}}.dump(1) << "\n";
    if (!out) throw sim::InputError(fmt::format("cannot write {}", path.string()));
    recorder_->meta()["phases"] = {{"file", "phases.json"}, {"count", rows.size()}};
  }
  if (samplers_.empty())
    recorder_->meta()["fabric_absent"] = engines_.empty()
                                             ? "this run simulated no wafer fabric (model endpoints stand in "
                                               "for the wafers)"
                                             : "congestion windows were not traced (--trace windows)";
  std::vector<std::string> files = recorder_->finish(end);
  if (recorder_->meta().contains("steps")) files.push_back("steps.json");
  if (recorder_->meta().contains("phases")) files.push_back("phases.json");
  return files;
}

}  // namespace wafersim::platforms

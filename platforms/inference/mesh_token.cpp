#include "platforms/inference/mesh_token.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include "models/mesh/mesh_expect.h"
#include "models/mesh/mesh_prefill.h"
#include "models/reference/format.h"
#include "platforms/inference/wafer_process.h"
#include "sim/errors.h"

namespace wafersim::platforms::inference {
namespace mesh = models::mesh;

mesh::MeshTarget mesh_target(const PlatformSpec& spec) {
  mesh::MeshTarget t;
  t.wafer = models::compiler::Target{spec.wafer, spec.fabric};
  t.systems = spec.cluster.systems;
  t.link_bits_per_s = spec.system.io_bandwidth_bits_per_s();
  return t;
}

namespace {

bool same(const mesh::MeshWafer& a, const mesh::MeshWafer& b) {
  return a.region.rows == b.region.rows && a.region.columns == b.region.columns && a.embedding == b.embedding &&
         a.head == b.head && a.layers == b.layers;
}

void compare(MeshWaferRun& out, Wafer& wafer, const mesh::MeshLayout& l, const mesh::DecodeResult& want) {
  const auto& a = l.addrs();
  const mesh::Region& g = l.region();
  auto check = [&](std::uint64_t got, std::uint64_t expected, const std::string& what) {
    ++out.compared;
    if (got == expected) return;
    if (!out.mismatches++) out.first_mismatch = fmt::format("{}: got {:#x}, expected {:#x}", what, got, expected);
  };
  for (std::uint32_t r = 0; r < g.rows; ++r)
    for (std::uint32_t c = 0; c < g.columns; ++c) {
      const auto f = l.col_features(c);
      if (!want.layers.empty()) {
        const auto x = read_pe(wafer, g, r, c, a.x, static_cast<std::uint32_t>(f.size()), l.esize());
        for (std::uint64_t k = 0; k < f.size(); ++k)
          check(x[k], want.layers.back().x[f.lo + k], fmt::format("x[{}] on PE ({}, {})", f.lo + k, r, c));
      }
      if (!l.head()) continue;
      const auto v = l.row_vocab(r);
      const auto lg = read_pe(wafer, g, r, c, a.logits, static_cast<std::uint32_t>(v.size()), l.esize());
      for (std::uint64_t k = 0; k < v.size(); ++k)
        check(lg[k], want.logits[v.lo + k], fmt::format("logit {} on PE ({}, {})", v.lo + k, r, c));
    }
}

// The prompt: token i is i mod the vocabulary.
std::vector<std::uint64_t> prompt_of(const mesh::DecoderShape& s, std::uint64_t tokens) {
  std::vector<std::uint64_t> v(tokens);
  for (std::uint64_t i = 0; i < tokens; ++i) v[i] = i % s.vocabulary;
  return v;
}

// A step over the blocks or of a group: its cycles and bound, `n` times (the steps it stands
// for), into its kernel's sum; `simulated`: whether it ran itself.
void add_to_kernel(MeshWaferRun& out, const std::string& kernel, mesh::PrefillPer per, std::uint64_t n,
                   std::uint64_t cycles, std::uint64_t bound, bool simulated) {
  auto it = std::find_if(out.prefill_kernels.begin(), out.prefill_kernels.end(),
                         [&](const MeshPrefillKernel& k) { return k.kernel == kernel && k.per == per; });
  if (it == out.prefill_kernels.end()) it = out.prefill_kernels.insert(it, MeshPrefillKernel{kernel, per});
  it->steps += n;
  it->simulated += simulated ? 1 : 0;
  it->cycles += cycles * n;
  it->bound += bound * n;
}

// The prefill of the simulated layers on one wafer (mesh_prefill.h), after `image` is placed:
// each product all N steps, or runs of 1 and M steps with the others at their difference's
// per-step cycles (every step runs the same code on every PE); the other kernels' steps
// summed by kernel; a later pass's step repeating an earlier pass's (RepeatedStep) at that
// one's cycles with its own bound (a product's steps_simulated 0). `done` hears of every
// simulated step as it ends.
void run_prefill(MeshWaferRun& out, MeshSimulation& sim, std::shared_ptr<const mesh::MeshLayout> layout,
                 const models::compiler::Target& t, std::uint32_t layers, const MeshTokenOptions& o,
                 const PeImage& image, const StepDone& done) {
  const mesh::MeshLayout& l = *layout;
  const std::uint32_t N = l.gemm_n();
  const std::uint32_t m = o.check || o.gemm_steps == 0 || o.gemm_steps >= N ? N : o.gemm_steps;
  const mesh::MeshPrefill prefill(t, layout, prompt_of(l.shape(), o.prefill), layers, m, o.prefill_products,
                                  o.prefill_sampled, o.prefill_group, o.prefill_chunk);
  out.prefill_group = prefill.group();
  const auto& ids = prefill.steps();
  const MeshRunResult r = sim.run_steps(
      ids.size(), [&](std::size_t i) { return prefill.step(i); }, image, done);
  // A product: its cycles (the runs ending at step `at`), with its own bound and work.
  auto product = [&](const mesh::MeshStep& full, std::uint32_t layer, std::size_t at) {
    MeshPrefillStep p;
    p.name = full.name;
    p.layer = layer;
    p.steps = N;
    p.simulated = m;
    p.cycles_m = r.steps[at].cycles();
    p.cycles_one = m < N ? r.steps[at - 1].cycles() : p.cycles_m;
    p.cycles = m < N ? p.cycles_one + (p.cycles_m - p.cycles_one) * (N - 1) / (m - 1) : p.cycles_m;
    p.bound = full.bound;
    p.flops = full.work.flops;
    return p;
  };
  const auto& repeated = prefill.repeated();
  std::size_t k = 0;
  for (std::size_t i = 0; i <= ids.size(); ++i) {
    for (; k < repeated.size() && repeated[k].before == i; ++k) {
      const mesh::PrefillStepId& id = repeated[k].id;
      if (id.kind == mesh::PrefillStepId::Kind::Gemm) {
        MeshPrefillStep p =
            product(mesh::gemm_step(l, t, id.g, id.layer, id.chunk, N, false), id.layer, repeated[k].same_as);
        p.simulated = 0;
        out.prefill.push_back(p);
      } else {
        const mesh::MeshStep own = prefill.repeated_step(k);
        add_to_kernel(out, own.kernel, id.per, id.count, r.steps[repeated[k].same_as].cycles(),
                      own.bound.with_latency(), false);
      }
    }
    if (i == ids.size()) break;
    const MeshStepResult& st = r.steps[i];
    if (ids[i].kind != mesh::PrefillStepId::Kind::Gemm)
      add_to_kernel(out, st.kernel, ids[i].per, ids[i].count, st.cycles(), st.bound.with_latency(), true);
    else if (ids[i].steps == m)
      out.prefill.push_back(
          product(mesh::gemm_step(l, t, ids[i].g, ids[i].layer, ids[i].chunk, N, false), ids[i].layer, i));
  }
}

// A prefill product through a wafer process's pipe.
void put(Wire& w, const MeshPrefillStep& p) {
  w.str(p.name);
  for (std::uint64_t v :
       {std::uint64_t{p.layer}, std::uint64_t{p.steps}, std::uint64_t{p.simulated}, p.cycles_one, p.cycles_m, p.cycles})
    w.u64(v);
  put(w, p.bound);
  w.u64(p.flops);
}

void put(Wire& w, const MeshPrefillKernel& k) {
  w.str(k.kernel);
  w.u64(static_cast<std::uint64_t>(k.per));
  w.u64(k.steps);
  w.u64(k.simulated);
  w.u64(k.cycles);
  w.u64(k.bound);
}

MeshPrefillKernel get_prefill_kernel(Wire& w) {
  MeshPrefillKernel k;
  k.kernel = w.str();
  k.per = static_cast<mesh::PrefillPer>(w.u64());
  k.steps = w.u64();
  k.simulated = w.u64();
  k.cycles = w.u64();
  k.bound = w.u64();
  return k;
}

MeshPrefillStep get_prefill_step(Wire& w) {
  MeshPrefillStep p;
  p.name = w.str();
  p.layer = static_cast<std::uint32_t>(w.u64());
  p.steps = static_cast<std::uint32_t>(w.u64());
  p.simulated = static_cast<std::uint32_t>(w.u64());
  p.cycles_one = w.u64();
  p.cycles_m = w.u64();
  p.cycles = w.u64();
  p.bound = get_bound(w);
  p.flops = w.u64();
  return p;
}

}  // namespace

// One simulated wafer: its layout, token and simulation, built before any runs.
struct MeshTokenSimulation::WaferSim {
  std::vector<std::uint32_t> wafers;
  std::shared_ptr<mesh::MeshLayout> layout;
  std::unique_ptr<mesh::MeshDecode> decode;
  std::unique_ptr<MeshSimulation> sim;
  mesh::DecoderWeights weights;
  mesh::DecoderCache cache;
  std::vector<mesh::Bits> x0;
};

MeshTokenSimulation::~MeshTokenSimulation() = default;

MeshTokenSimulation::MeshTokenSimulation(const PlatformSpec& spec, const models::ModelSpec& model,
                                         const MeshTokenOptions& o, BuildOptions build, sim::stats::Group& root)
    : o_(o), one_(spec), build_(std::move(build)), target_(mesh_target(spec)), root_(&root) {
  target_.rows = o.rows;
  target_.columns = o.columns;
  target_.prefill = o.prefill;
  target_.prefill_chunk = o.prefill_chunk;
  plan_ = mesh::plan_mesh(model, target_);
  o_.prefill_chunk = plan_.prefill_chunk;
  const mesh::DecoderShape& s = plan_.shape;
  if (o.position >= s.capacity)
    throw sim::InputError(
        fmt::format("the token's position {} is beyond the KV cache's {} positions (the model's sequence)", o.position,
                    s.capacity));
  if (o.token >= s.vocabulary)
    throw sim::InputError(fmt::format("token {} is beyond the vocabulary of {}", o.token, s.vocabulary));
  if (o.prefill && o.check)
    for (std::uint32_t i = 0; i < plan_.wafers.size(); ++i)
      if ((o.wafer < 0 || i == static_cast<std::uint32_t>(o.wafer)) && !plan_.wafers[i].embedding)
        throw sim::InputError(fmt::format(
            "a functional prefill runs on the wafer that holds the embedding, and wafer {} does not (the prompt's "
            "residual stream from the wafer before is not simulated): add --timing-only or --mesh-wafer 0",
            i));
  if (o.prefill && o.position != o.prefill)
    throw std::logic_error("MeshTokenSimulation: the token after a prefill is at the prompt's end");
  if (o.prefill_products && o.check)
    throw std::logic_error("MeshTokenSimulation: the prefill's products alone run timing-only");
  if (o.prefill_sampled && o.check) throw std::logic_error("MeshTokenSimulation: a sampled prefill runs timing-only");
  if (o.gemm_steps == 1) throw sim::InputError("MeshGEMM steps simulated: all (0) or 2 or more, not 1");
  if (o.prefill_group == 0) throw sim::InputError("the prefill's attention groups: 1 or more tokens, not 0");
  if (o.wafer >= static_cast<std::int32_t>(plan_.wafers.size()))
    throw sim::InputError(fmt::format("wafer {} is beyond the plan's {} wafer{}", o.wafer, plan_.wafers.size(),
                                      plan_.wafers.size() == 1 ? "" : "s"));
  // One wafer of the platform per simulation: the others are not needed for it.
  one_.cluster.systems = 1;
  build_.timing_only = !o.check;
  const auto& wafers = plan_.wafers;
  for (std::uint32_t i = 0; i < wafers.size(); ++i) {
    if (o.wafer >= 0 && i != static_cast<std::uint32_t>(o.wafer)) continue;
    bool found = false;
    for (auto& r : regions_)
      if (same(wafers[r[0]], wafers[i])) {
        r.push_back(i);
        found = true;
      }
    if (!found) regions_.push_back({i});
  }
  if (!o.separate)
    for (const auto& r : regions_) sims_.push_back(make_sim(r, root));
}

std::unique_ptr<MeshTokenSimulation::WaferSim> MeshTokenSimulation::make_sim(const std::vector<std::uint32_t>& wafers,
                                                                             sim::stats::Group& root) const {
  auto w = std::make_unique<WaferSim>();
  w->wafers = wafers;
  const std::uint32_t i = wafers[0];
  const mesh::MeshWafer& mw = plan_.wafers[i];
  w->layout = std::make_shared<mesh::MeshLayout>(plan_.shape, mw.region, mw.layers, mw.embedding, mw.head,
                                                 mesh::collective_stage(target_.wafer),
                                                 mesh::buffer_alignment(target_.wafer), target_.wafer.sram_bytes());
  const std::uint32_t simulated = o_.layers ? std::min(o_.layers, mw.layers) : mw.layers;
  w->decode = std::make_unique<mesh::MeshDecode>(target_.wafer, w->layout, o_.position, o_.token, simulated);
  w->sim = std::make_unique<MeshSimulation>(one_, build_, root.group(fmt::format("wafer{}", i)), *w->decode, o_.limits);
  return w;
}

MeshWaferRun MeshTokenSimulation::run_sim(WaferSim& w, const StepDone& done) const {
  const mesh::DecoderShape& s = plan_.shape;
  const MeshTokenOptions& o = o_;
  const mesh::MeshLayout& l = *w.layout;
  PeImage image;
  if (o.check) {
    w.weights = mesh::random_weights(s, l.layers(), o.seed);
    // After a prefill the cache is what it leaves: empty when placed, the host's expectation
    // of it for the decode token.
    w.cache = mesh::random_cache(s, l.layers(), o.prefill ? 0 : o.position, o.seed + 1);
    if (!l.embedding()) {
      const auto x = mesh::random_weights(s, 0, o.seed + 2).gf;  // d values around 1
      for (std::size_t j = 0; j < x.size(); ++j) w.x0.push_back(x.bits(j));
    }
    image = [&](std::uint32_t r, std::uint32_t c) {
      return mesh::pe_image(l, w.weights, w.cache, o.prefill ? 0 : o.position, w.x0, r, c);
    };
  }
  MeshWaferRun run;
  run.wafers = w.wafers;
  run.simulated_layers = w.decode->simulated_layers();
  const auto t0 = std::chrono::steady_clock::now();
  if (o.prefill) {
    run_prefill(run, *w.sim, w.layout, w.decode->target(), run.simulated_layers, o, image, done);
    image = {};  // placed before the prefill
    if (o.check)
      w.cache =
          mesh::expect_prefill(l, w.weights, prompt_of(s, o.prefill), run.simulated_layers, o.prefill_chunk).cache;
  }
  run.run = w.sim->run(image, done);
  run.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.check)
    compare(run, w.sim->wafer(), l,
            mesh::expect_decode(l, w.weights, w.cache, o.token, o.position, run.simulated_layers, w.x0));
  return run;
}

// The region's wafer built, run and freed in a child process; its run and statistics as bytes.
std::string MeshTokenSimulation::run_in_child(const std::vector<std::uint32_t>& wafers, const StepDone& done) {
  Wire wire = in_child([&](Wire& out) {
    sim::stats::Group root("");
    auto w = make_sim(wafers, root);
    const MeshWaferRun r = run_sim(*w, done);
    out.u64(r.simulated_layers);
    out.u64(r.run.start);
    out.u64(r.run.end);
    out.u64(r.run.steps.size());
    for (const auto& st : r.run.steps) put(out, st);
    out.u64(r.prefill.size());
    for (const auto& p : r.prefill) put(out, p);
    out.u64(r.prefill_kernels.size());
    for (const auto& k : r.prefill_kernels) put(out, k);
    out.u64(r.prefill_group);
    out.f64(r.wall_seconds);
    out.u64(r.compared);
    out.u64(r.mismatches);
    out.str(r.first_mismatch);
    put(out, root);
  });
  return wire.bytes();
}

MeshWaferRun MeshTokenSimulation::read_run(const std::vector<std::uint32_t>& wafers, const std::string& bytes) {
  Wire wire(bytes);
  MeshWaferRun r;
  r.wafers = wafers;
  r.simulated_layers = static_cast<std::uint32_t>(wire.u64());
  r.run.start = wire.u64();
  r.run.end = wire.u64();
  r.run.steps.resize(wire.u64());
  for (auto& st : r.run.steps) st = get_step(wire);
  r.prefill.resize(wire.u64());
  for (auto& p : r.prefill) p = get_prefill_step(wire);
  r.prefill_kernels.resize(wire.u64());
  for (auto& k : r.prefill_kernels) k = get_prefill_kernel(wire);
  r.prefill_group = static_cast<std::uint32_t>(wire.u64());
  r.wall_seconds = wire.f64();
  r.compared = wire.u64();
  r.mismatches = wire.u64();
  r.first_mismatch = wire.str();
  get_stats(wire, *root_, kept_);
  return r;
}

// The token's parts from a region's run, for every wafer with its region.
void MeshTokenSimulation::add(MeshToken& t, MeshWaferRun run) const {
  std::uint64_t layers = 0;
  for (const auto& st : run.run.steps) {
    if (st.name == "embed")
      t.embed_cycles += st.cycles();
    else if (st.name == "ln_f" || st.name == "head")
      t.head_cycles += st.cycles();
    else
      layers += st.cycles();
  }
  std::uint64_t gemm = 0, other = 0, once = 0, between = 0;
  for (const auto& p : run.prefill) gemm += p.cycles;
  for (const auto& k : run.prefill_kernels)
    (k.per == mesh::PrefillPer::Wafer ? once : k.per == mesh::PrefillPer::Between ? between : other) += k.cycles;
  for (std::uint32_t i : run.wafers) {
    const std::uint64_t n = plan_.wafers[i].layers, k = run.simulated_layers;
    t.layer_cycles += k ? (layers * n + k / 2) / k : 0;
    t.prefill_gemm_cycles += k ? (gemm * n + k / 2) / k : 0;
    // Between layers: n - 1 on the wafer, of which the run simulated k (or k - 1 when it
    // simulated them all), every one the same steps.
    const std::uint64_t gaps = std::min(k, n - 1);
    t.prefill_other_cycles +=
        (k ? (other * n + k / 2) / k : 0) + once + (gaps ? (between * (n - 1) + gaps / 2) / gaps : 0);
    t.layers_total += n;
  }
  t.prefill_cycles = t.prefill_gemm_cycles + t.prefill_other_cycles;
  t.prefill_group = std::max(t.prefill_group, run.prefill_group);
  t.layers_simulated += run.simulated_layers;
  t.runs.push_back(std::move(run));
}

MeshToken MeshTokenSimulation::run(const StepDone& done, sim::parallel::Transport* ranks) {
  MeshToken t;
  t.plan = plan_;
  const unsigned n_ranks = ranks ? ranks->ranks() : 1;
  if (n_ranks > 1) {
    if (!o_.separate || n_ranks > regions_.size())
      throw sim::InputError(
          fmt::format("{} MPI ranks for {} distinct wafer region{} of the mesh plan: at most one rank per region",
                      n_ranks, regions_.size(), regions_.size() == 1 ? "" : "s"));
    const unsigned me = ranks->rank();
    const sim::parallel::ItemRange mine = sim::parallel::rank_items(regions_.size(), n_ranks, me);
    std::vector<std::string> bytes(regions_.size());
    for (std::size_t k = mine.begin; k < mine.end; ++k) {
      bytes[k] = run_in_child(regions_[k], done);
      if (me != 0) ranks->send(0, bytes[k]);
    }
    if (me != 0) return t;
    for (std::size_t k = 0; k < regions_.size(); ++k) {
      const unsigned owner = sim::parallel::rank_of_item(regions_.size(), n_ranks, k);
      if (owner != me) bytes[k] = ranks->receive(owner);
      MeshWaferRun r = read_run(regions_[k], bytes[k]);
      r.rank = owner;
      add(t, std::move(r));
    }
  } else if (o_.separate) {
    for (const auto& r : regions_) add(t, read_run(r, run_in_child(r, done)));
  } else {
    for (auto& w : sims_) add(t, run_sim(*w, done));
  }
  t.only_wafer = o_.wafer;
  t.prefill_tokens = o_.prefill;
  t.prefill_chunk = o_.prefill_chunk ? o_.prefill_chunk : o_.prefill;
  t.prefill_sampled = o_.prefill_sampled && !o_.prefill_products;
  // The links the token crosses: between every pair of wafers, or out of this one.
  const std::size_t n = plan_.wafers.size();
  t.link_cycles = o_.wafer >= 0 ? (static_cast<std::size_t>(o_.wafer) + 1 < n ? plan_.link_cycles : 0)
                                : (n - 1) * plan_.link_cycles;
  return t;
}

}  // namespace wafersim::platforms::inference

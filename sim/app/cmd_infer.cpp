// `wafersim infer`: inference of a compiled model on a platform: weights resident in SRAM (the
// prefill of a prompt, decode steps with their KV caches, or the pipeline over regions) or
// streamed (the forward pass on wafer 0); over platforms/runtime's ModelRun and
// platforms/inference.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <tuple>

#include "models/compiler/compiler.h"
#include "models/mesh/mesh_plan.h"
#include "models/resident/resident_decode.h"
#include "models/resident/resident_plan.h"
#include "models/resident/resident_program.h"
#include "platforms/inference/decode_run.h"
#include "platforms/inference/mesh_token.h"
#include "platforms/inference/pipeline_run.h"
#include "platforms/inference/place_weights.h"
#include "sim/app/mesh_report.h"
#include "sim/app/model_run_output.h"
#include "sim/app/on_ranks.h"
#include "sim/app/pipeline_report.h"
#include "sim/app/workflows.h"
#include "sim/errors.h"

namespace wafersim::app {

void InferArgs::add(CLI::App& cmd, const std::string& group) {
  cmd.add_option("--prompt-len", prompt_len,
                 "weights resident: prompt tokens per sample of the prefill (sets the model's sequence)")
      ->type_name("N")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20))
      ->group(group);
  cmd.add_option("--decode-tokens", decode_tokens,
                 "weights resident: run token by token, the prompt (--prompt-len, default: the model's sequence minus "
                 "K) filling each attention layer's KV cache in SRAM, then K decode steps")
      ->type_name("K")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20))
      ->group(group);
  cmd.add_flag("--token-by-token", token_by_token,
               "with --decode-tokens: feed the prompt one position per step (each appending to the KV caches) "
               "instead of one parallel prefill whose keys and values are then copied into the caches")
      ->group(group);
  cmd.add_flag("--pipeline", pipeline,
               "weights resident: simulate the pipeline: every linear layer (with a gelu, silu or relu after it; two "
               "of one input with swiglu after them as one stage; q, k and v of one input as one stage), causal "
               "attention (its KV cache in SRAM), rmsnorm, layernorm, residual add and a first embedding on its own "
               "column of PEs, all at once, the batch's tokens flowing from column to column over the fabric; with "
               "--decode-tokens K the last K positions as decode steps after the prefill; cycles, tokens/s and the "
               "bound (chains of these only)")
      ->group(group);
  cmd.add_option("--pipeline-replicas", pipeline_replicas,
                 "with --pipeline: pipelines side by side on bands of rows, sharing the tokens (0: the number, up to "
                 "the tokens and rows, whose estimated run is shortest)")
      ->capture_default_str()
      ->type_name("K")
      ->group(group);
  cmd.add_option("--pipeline-cut", pipeline_cut,
                 "with --pipeline: rows-out (each row computes some outputs over every input) or rows-in (each row "
                 "takes some inputs and continues the sums of the row above)")
      ->check(CLI::IsMember({"rows-out", "rows-in"}))
      ->capture_default_str()
      ->group(group);
  cmd.add_option("--mesh-layers", mesh_layers,
                 "with --placement mesh: layers simulated on each wafer (a number, or all); the others run the same "
                 "program at other addresses and take the simulated layer's cycles")
      ->capture_default_str()
      ->type_name("N|all")
      ->group(group);
  cmd.add_option("--mesh-region", mesh_region,
                 "with --placement mesh: the region on every wafer, ROWSxCOLUMNS, instead of the planner's")
      ->type_name("RxC")
      ->group(group);
  cmd.add_option("--mesh-wafer", mesh_wafer,
                 "with --placement mesh: simulate only this wafer of the plan (its part of the token), not all")
      ->type_name("N")
      ->group(group);
  cmd.add_option("--prefill", prefill,
                 "with --placement mesh: prefill a prompt of N tokens first (tokens 0, 1, 2, ...: each simulated "
                 "layer's products by MeshGEMM on a region at most twice as long as wide, its residual adds, norms and "
                 "SwiGLU over the "
                 "GEMM's blocks, causal attention token by token, filling the KV cache), then the decode token at "
                 "position N; e.g. "
                 "wafersim infer tiny --model examples/models/tiny-llama.yaml --placement mesh --prefill 15")
      ->type_name("N")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20))
      ->group(group);
  cmd.add_option("--mesh-gemm-steps", mesh_gemm_steps,
                 "with --prefill --timing-only: MeshGEMM shift steps simulated per product (M >= 2: runs of 1 and M "
                 "steps, the others at their difference's cycles per step, and a later pass's product whose blocks "
                 "hold as many tokens as an earlier pass's at that one's cycles; all: every step of every product, as "
                 "functional runs do)")
      ->capture_default_str()
      ->type_name("M|all")
      ->group(group);
  cmd.add_flag("--mesh-prefill-products", mesh_prefill_products,
               "with --prefill --timing-only: simulate the prefill's products only (MeshGEMM), not the steps "
               "between them")
      ->group(group);
  cmd.add_option("--mesh-prefill-group", mesh_prefill_group,
                 "with --prefill: causal attention runs over groups of at most G consecutive prompt tokens at once "
                 "(fewer where the group's buffers do not fit a PE's SRAM); 1: token by token")
      ->capture_default_str()
      ->type_name("G")
      ->check(CLI::Range(1u, 4096u))
      ->group(group);
  cmd.add_option("--mesh-prefill-chunk", mesh_prefill_chunk,
                 "with --prefill: run the prompt in passes of N tokens, each through every layer before the next "
                 "(MeshGEMM's blocks then hold ceil(N / side) tokens, not the whole prompt's share); default: one "
                 "pass, or where the whole prompt's blocks do not fit, passes of the region's shorter side")
      ->type_name("N")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20))
      ->group(group);
  cmd.add_option("--mesh-prefill-tokens", mesh_prefill_tokens,
                 "with --prefill --timing-only: the prompt's groups whose steps are simulated (and the tokens of "
                 "the wafer's input, token by token): all; or sampled, the first and last group of each depth of "
                 "the attention's cache, each other group at the nearer sample's cycles, and a later pass's steps "
                 "over the blocks whose blocks hold as many tokens as an earlier pass's at that one's cycles (for "
                 "large regions)")
      ->check(CLI::IsMember({"all", "sampled"}))
      ->capture_default_str()
      ->group(group);
  cmd.add_option("--token", token, "with --placement mesh: the decode token's id")
      ->capture_default_str()
      ->type_name("ID")
      ->group(group);
}

namespace {

struct Inference {
  const Workflow& w;
  const InferArgs& a;
  platforms::LoadedPlatform loaded;
  models::LoadedModel m;
  models::compiler::Target target;
  sim::parallel::Transport& ranks;  // one process, or the ranks of an MPI launch (mesh only)

  [[nodiscard]] std::vector<std::string> with_sequence(std::uint64_t n) const {
    auto s = w.model.set;
    s.push_back(fmt::format("sequence={}", n));
    return s;
  }

  [[nodiscard]] std::optional<models::resident::ResidentPlan> plan() const {
    const models::resident::ClusterTarget ct{target, loaded.spec.cluster.systems,
                                             loaded.spec.system.io_bandwidth_bits_per_s()};
    try {
      return models::resident::plan_resident(m.spec, ct);
    } catch (const sim::InputError&) {
      // The pipeline over regions needs more SRAM than the layer-by-layer run: no figures.
      return std::nullopt;
    }
  }

  // Weight streaming: the forward pass of one step on wafer 0.
  void refuse_failures(const char* what) const {
    if (!w.fails.empty())
      throw sim::InputError(fmt::format(
          "--fail {}: links and PEs fail in the compiled model's run ('wafersim run', 'wafersim infer' with "
          "--placement resident or streaming), not with {}",
          w.fails[0], what));
  }

  void streaming() const {
    if (a.any())
      throw sim::InputError("--prompt-len, --decode-tokens and --pipeline need the resident placement (the default)");
    models::compiler::CompileOptions options = w.model.options(true);
    options.plan_missing_code = w.check.plan_missing_code;
    const auto cm = models::compiler::compile(m.spec, target, options);
    run_compiled_model(w, "infer", loaded, cm, platforms::runtime::make_host_data(cm, w.sim.seed));
  }

  // Weights resident: the prefill of the prompt with every linear layer's weights placed in
  // SRAM once (step 0), then the plan's decode figures beside it.
  void prefill() {
    if (a.prompt_len) m = models::load_model(w.model.model, with_sequence(a.prompt_len));
    auto rp = models::resident::compile_resident_program(m.spec, target, w.model.options(true).accumulate);
    auto data = platforms::runtime::make_host_data(rp.cm, w.sim.seed);
    platforms::inference::place_weights(rp, data);
    const auto p = plan();
    run_compiled_model(w, "infer", loaded, rp.cm, std::move(data), p ? &*p : nullptr);
  }

  // Decode steps after the prompt: the prompt as one parallel prefill whose keys and values are
  // copied into the KV caches (or, with --token-by-token, fed one position per step), then
  // --decode-tokens steps; every attention step checked against models/reference.
  void decode() const {
    const std::uint64_t capacity = m.spec.sequence;
    if (a.decode_tokens >= capacity)
      throw sim::InputError(
          fmt::format("--decode-tokens {} leaves no prompt in the model's sequence of {} (the KV cache's length)",
                      a.decode_tokens, capacity));
    const std::uint64_t prompt = a.prompt_len ? a.prompt_len : capacity - a.decode_tokens;
    const auto one = models::load_model(w.model.model, with_sequence(1));
    std::optional<models::LoadedModel> whole;
    if (!a.token_by_token) whole = models::load_model(w.model.model, with_sequence(prompt));
    auto rd =
        models::resident::compile_resident_decode(one.spec, target, prompt, prompt + a.decode_tokens, capacity,
                                                  w.model.options(true).accumulate, whole ? &whole->spec : nullptr);
    auto data = platforms::runtime::make_host_data(rd.rp.cm, w.sim.seed);
    platforms::runtime::HostData prefill_data;
    if (rd.prefill) {
      prefill_data = platforms::runtime::make_host_data(rd.prefill->cm, w.sim.seed);
      platforms::inference::add_position_inputs(rd, data, w.sim.seed, &prefill_data);
      platforms::inference::place_weights(*rd.prefill, prefill_data);
    } else {
      platforms::inference::add_position_inputs(rd, data, w.sim.seed);
      platforms::inference::place_weights(rd.rp, data);
    }
    run_compiled_model(w, "infer", loaded, rd.rp.cm, std::move(data), nullptr, &rd, std::move(prefill_data));
  }

  // The mesh placement: one decode token at position --prompt-len (default: half the model's
  // sequence), simulated on each distinct region of the plan's wafers.
  void mesh() const {
    refuse_failures("--placement mesh");
    if (a.pipeline || a.decode_tokens || a.token_by_token)
      throw sim::InputError(
          "--pipeline and --decode-tokens are for the resident placement; --placement mesh runs "
          "one decode token at position --prompt-len");
    platforms::inference::MeshTokenOptions o;
    o.position = a.prompt_len ? a.prompt_len : m.spec.sequence / 2;
    if (a.prefill) {
      if (a.prompt_len)
        throw sim::InputError(fmt::format(
            "--prefill {} sets the prompt and the decode token's position after it: drop --prompt-len", a.prefill));
      if (a.prefill >= m.spec.sequence)
        throw sim::InputError(fmt::format(
            "--prefill: expected fewer prompt tokens than the KV cache's {} positions (the model's sequence), found {}",
            m.spec.sequence, a.prefill));
      o.prefill = o.position = a.prefill;
    }
    if (a.mesh_gemm_steps == "all") {
      o.gemm_steps = 0;
    } else {
      std::size_t used = 0;
      unsigned long v = 0;
      try {
        v = std::stoul(a.mesh_gemm_steps, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != a.mesh_gemm_steps.size() || v < 2 || v > 100000)
        throw sim::InputError(fmt::format(
            "--mesh-gemm-steps: expected a number of steps (2 or more) or 'all', found '{}'", a.mesh_gemm_steps));
      o.gemm_steps = static_cast<std::uint32_t>(v);
    }
    o.token = a.token;
    if (a.mesh_prefill_products && (!a.prefill || !w.check.timing_only))
      throw sim::InputError(
          "--mesh-prefill-products: a timing-only prefill's products alone (add --prefill P and --timing-only)");
    o.prefill_products = a.mesh_prefill_products;
    if (a.mesh_prefill_tokens == "sampled" && (!a.prefill || !w.check.timing_only))
      throw sim::InputError(
          "--mesh-prefill-tokens sampled: a timing-only prefill's token-by-token steps, sampled (add --prefill P and "
          "--timing-only)");
    o.prefill_sampled = a.mesh_prefill_tokens == "sampled";
    o.prefill_group = a.mesh_prefill_group;
    if (a.mesh_prefill_chunk && !a.prefill)
      throw sim::InputError("--mesh-prefill-chunk: passes of a prefill (add --prefill P)");
    o.prefill_chunk = a.mesh_prefill_chunk;
    if (a.mesh_layers == "all") {
      o.layers = 0;
    } else {
      try {
        std::size_t used = 0;
        const unsigned long v = std::stoul(a.mesh_layers, &used);
        if (used != a.mesh_layers.size() || v == 0 || v > 100000) throw std::invalid_argument("range");
        o.layers = static_cast<std::uint32_t>(v);
      } catch (const std::exception&) {
        throw sim::InputError(
            fmt::format("--mesh-layers: expected a number of layers (1 or more) or 'all', found '{}'", a.mesh_layers));
      }
    }
    o.check = !w.check.timing_only && !w.check.no_check;
    o.wafer = a.mesh_wafer;
    o.seed = w.sim.seed;
    o.limits = w.sim.limits();
    auto mt = platforms::inference::mesh_target(loaded.spec);
    if (!a.mesh_region.empty()) std::tie(o.rows, o.columns) = parse_mesh_region(a.mesh_region);
    mt.rows = o.rows;
    mt.columns = o.columns;
    mt.prefill = o.prefill;
    const auto plan = models::mesh::plan_mesh(m.spec, mt);
    std::uint64_t bytes = 0;
    for (std::size_t i = 0; i < plan.wafers.size(); ++i)
      if (o.wafer < 0 || i == static_cast<std::size_t>(o.wafer))
        bytes += plan.wafers[i].region.pes() * plan.wafers[i].addrs.end;
    if (o.check && bytes > (std::uint64_t{4} << 30))
      throw sim::InputError(fmt::format(
          "a functional mesh run places {} GB of weights and caches in the simulated SRAM: add --timing-only",
          bytes >> 30));
    // Several wafers: each built, run and freed in turn (the memory of one); over MPI ranks,
    // the distinct regions shared out among the ranks, rank 0 writing the run.
    o.separate = o.wafer < 0 && plan.wafers.size() > 1;
    const bool first = ranks.rank() == 0;
    std::optional<RunDir> dir;
    if (first) dir = w.sim.run_dir("infer");
    sim::stats::Group root("");
    const bool progress = first && !w.sim.json && !std::getenv("WAFERSIM_NO_PROGRESS");
    const auto t0 = std::chrono::steady_clock::now();
    platforms::inference::MeshTokenSimulation simulation(loaded.spec, m.spec, o, w.sim.build_options(), root);
    const auto t = simulation.run(
        [&](const platforms::inference::MeshStepResult& s) {
          if (progress)
            std::cerr << fmt::format("  {} ({}) {} cycles, {:.1f} s\n", s.name, s.kernel, s.cycles(),
                                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        },
        &ranks);
    if (first) write_mesh_token(*dir, t, root, o.position);
  }

  // Rank 0's outputs of a mesh run: the run files, mesh.json and the summary; over MPI ranks,
  // the wafers each rank simulated.
  void write_mesh_token(const RunDir& dir, const platforms::inference::MeshToken& t, sim::stats::Group& root,
                        std::uint64_t position) const {
    std::uint64_t mismatches = 0, cycles = 0;
    for (const auto& r : t.runs) {
      mismatches += r.mismatches;
      cycles += r.run.cycles();
    }
    double wall = 0;
    for (const auto& r : t.runs) wall += r.wall_seconds;
    write_run_files(dir, loaded, root, invocation_text(), wall, sim::Cycle(cycles), mismatches ? "error" : "ok");
    nlohmann::ordered_json j = mesh_token_json(t, m.spec, loaded.spec.name, loaded.spec.wafer.clock.hz, position);
    std::vector<std::vector<std::uint32_t>> by_rank(ranks.ranks());  // the wafers each rank simulated
    for (const auto& r : t.runs) by_rank[r.rank].insert(by_rank[r.rank].end(), r.wafers.begin(), r.wafers.end());
    if (ranks.ranks() > 1) j["ranks"] = by_rank;
    dir.write("mesh.json", j.dump(2) + "\n");
    if (w.sim.json) {
      j["out"] = dir.path().string();
      std::cout << j.dump(2) << "\n";
    } else {
      print_mesh_token(std::cout, t, m.spec, loaded.spec.name, loaded.spec.wafer.clock.hz, position);
      for (unsigned r = 0; r < by_rank.size() && by_rank.size() > 1; ++r)
        std::cout << fmt::format("  {:11} wafer{} {} on MPI rank {} of {}\n", r ? "" : "ranks",
                                 by_rank[r].size() == 1 ? "" : "s", fmt::join(by_rank[r], ", "), r, ranks.ranks());
      std::cout << fmt::format("  out         {}\n", dir.path().string());
    }
    if (mismatches) throw sim::SimulationError(fmt::format("{} values differ from the host's computation", mismatches));
  }

  // The pipeline simulated: every layer on its own column of PEs, all at once, the batch's
  // tokens flowing from column to column over the fabric.
  void pipeline() const {
    refuse_failures("--pipeline");
    if (a.prompt_len)
      throw sim::InputError(
          "--pipeline runs the model's batch x sequence tokens through the pipeline (with --decode-tokens D, the "
          "last D positions as decode steps after the prefill of the others): drop --prompt-len");
    const auto cut =
        a.pipeline_cut == "rows-in" ? models::resident::PipelineCut::RowsIn : models::resident::PipelineCut::RowsOut;
    const auto p =
        models::resident::compile_pipeline(m.spec, target, w.sim.seed, cut, a.pipeline_replicas, a.decode_tokens);
    refuse_sparse_model(m.spec, "infer");
    RunDir dir = w.sim.run_dir("infer");
    sim::stats::Group root("");
    platforms::inference::PipelineSimulation simulation(loaded.spec, w.sim.build_options(), root, p);
    const bool check = !w.check.no_check;
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = simulation.run(check, w.sim.limits());
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto pl = plan();
    write_run_files(dir, loaded, root, invocation_text(), wall, simulation.wafer().engine().cycles(),
                    r.mismatches ? "error" : "ok");
    nlohmann::ordered_json j = pipeline_json(loaded.spec, m.spec, p, r, pl ? &*pl : nullptr);
    dir.write("pipeline.json", j.dump(2) + "\n");
    if (w.sim.json) {
      j["wall_seconds"] = wall;
      j["out"] = dir.path().string();
      std::cout << j.dump(2) << "\n";
    } else {
      print_pipeline(loaded.spec, m.spec, p, r, pl ? &*pl : nullptr, check, dir.path().string());
    }
    if (r.mismatches)
      throw sim::SimulationError(fmt::format("{} of {} outputs differ from models/reference; first: {}", r.mismatches,
                                             r.compared, r.first_mismatch));
  }
};

}  // namespace

void infer(const Workflow& w, const InferArgs& a) {
  if (w.model.model.empty()) throw sim::InputError("inference needs a model (--model MODEL)");
  if (a.token_by_token && !a.decode_tokens) throw sim::InputError("--token-by-token needs --decode-tokens");
  if (w.check.plan_missing_code && !w.check.timing_only && !w.check.no_check)
    throw sim::InputError(
        "--plan-missing-code skips steps, so later steps read values nobody wrote: add --timing-only or --no-check");
  auto loaded = w.platform.load();
  auto m = w.model.load();
  const models::compiler::Target target{loaded.spec.wafer, loaded.spec.fabric};
  // MPI ranks when an MPI launcher started this process (docs/parallel.md), else one process.
  const auto transport = sim::parallel::process_transport();
  Inference run{w, a, std::move(loaded), std::move(m), target, *transport};
  if (transport->ranks() > 1)
    return on_ranks(*transport, [&] {
      if (w.model.placement != "mesh")
        throw sim::InputError(fmt::format(
            "infer over {} MPI ranks shares a mesh plan's wafer regions among them: add --placement mesh, or run "
            "--placement {} in one process",
            transport->ranks(), w.model.placement));
      run.mesh();
    });
  if (w.model.placement == "mesh") return run.mesh();
  if (a.prefill)
    throw sim::InputError(
        fmt::format("--prefill is the mesh placement's prefill (--placement mesh); with --placement {} the prompt is "
                    "--prompt-len",
                    w.model.placement));
  if (w.model.placement != "resident") return run.streaming();
  if (a.pipeline) return run.pipeline();
  if (a.decode_tokens) return run.decode();
  run.prefill();
}

void add_infer_command(CLI::App& app) {
  auto w = std::make_shared<Workflow>();
  auto a = std::make_shared<InferArgs>();
  CLI::App* sub = app.add_subcommand(
      "infer",
      "inference of a compiled model: weights resident in SRAM (the prefill of a prompt, decode steps with their KV "
      "caches, or the pipeline over regions), or streamed in from the edge (--placement streaming)");
  w->platform.add(*sub, "tiny");
  w->sim.add(*sub);
  w->trace.add(*sub);
  sub->add_option("--model,-m", w->model.model, "the model (YAML file or preset: tiny-mlp, tiny-transformer, ...)")
      ->type_name("MODEL")
      ->required();
  w->model.add(*sub, ModelArgs::Use::Infer);
  a->add(*sub, "Inference");
  w->check.add(*sub);
  add_fail_option(*sub, w->fails);
  sub->footer(
      "Examples:\n"
      "  wafersim infer tiny --model tiny-transformer --prompt-len 4\n"
      "  wafersim infer tiny --model tiny-transformer --decode-tokens 2\n"
      "  wafersim infer tiny --set wafer.width=16 --set wafer.height=16 --model examples/models/decoder-block.yaml \\\n"
      "      --pipeline --decode-tokens 2\n"
      "  wafersim infer tiny --model tiny-mlp --placement streaming\n"
      "  wafersim infer wse2 --model llama3-8b --placement mesh --timing-only --prompt-len 4096\n"
      "  wafersim infer tiny --model examples/models/tiny-llama.yaml --placement mesh --timing-only --prefill 12\n"
      "  mpirun -np 3 wafersim infer cs3-cluster --model llama3-70b --placement mesh --timing-only  # regions at once\n"
      "Writes config.yaml, stats.json, stats.txt and run.json into the output folder, with model.json (the\n"
      "mapping and every step's figures) or, with --pipeline, pipeline.json (the run and each stage's bounds).\n"
      "Weights resident: every linear layer's weights are placed in SRAM once (step 'weights') and read there\n"
      "by the products; the run is the prefill of the prompt (--prompt-len), with prefill cycles and tokens/s\n"
      "and the decode bound of the pipelined plan ('wafersim compile --placement resident') beside them. With\n"
      "--decode-tokens K the prompt runs as one parallel prefill (one sample per column), its keys and values\n"
      "are copied into each attention layer's KV cache in SRAM, then K decode steps (one token per sample and\n"
      "step) append to it (--token-by-token: the prompt one position per step instead); every attention step\n"
      "is checked against models/reference over the cached keys. With --pipeline (decoder-only transformers:\n"
      "chains of linear layers with gelu, silu or relu, swiglu pairs, q/k/v with causal attention, rmsnorm,\n"
      "layernorm, residual adds and a first embedding) every layer runs on its own column of PEs, all at\n"
      "once, each token's activations flowing over the fabric to the next column; outputs checked bit for bit.\n"
      "Mesh placement (--placement mesh, Llama-style decoders): one decode token at position --prompt-len on\n"
      "the plan's regions (wafersim compile --placement mesh), --mesh-layers of each wafer's layers simulated\n"
      "(default 1: the others take its cycles), every step's cycles against its bound and the token's tokens/s;\n"
      "functional (random weights and cache, results compared bit for bit) unless --timing-only.\n"
      "Weight streaming: the forward pass of one step on wafer 0, weights streamed in through the west edge.\n"
      "Exit code 3 if a result differs from the host's (docs/compiler.md).");
  sub->callback([w, a] { infer(*w, *a); });
}

}  // namespace wafersim::app

#pragma once
// One decode token of a mesh-placed decoder on a platform (docs/compiler.md, "Mesh
// placement"), the library entry of `wafersim infer --placement mesh`: the plan's wafers, the
// token simulated cycle by cycle on each distinct region (the embedding, some or all of its
// layers, the final norm and the head), and the token's time from those steps: every layer
// of a wafer runs the same program at other addresses, so a layer not simulated takes the
// simulated layer's cycles (said so in the result), and the residual stream crosses from
// wafer to wafer over the systems' link.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/mesh/mesh_plan.h"
#include "models/mesh/mesh_prefill.h"
#include "platforms/inference/mesh_run.h"
#include "platforms/platform_spec.h"
#include "sim/parallel/transport.h"

namespace wafersim::platforms::inference {

struct MeshTokenOptions {
  std::uint64_t position = 0;  // the token's position: positions [0, position) are cached
  std::uint64_t token = 0;
  std::uint32_t layers = 1;  // layers simulated on each wafer (0: all of them)
  bool check = false;        // functional: random weights and cache placed, results compared with the host
  std::uint64_t seed = 1;
  std::uint32_t rows = 0, columns = 0;  // the region on every wafer (0: the planner's)
  // Only this wafer of the plan (its part of the token: its layers, and the embedding or the
  // head when they are on it), or every wafer (-1).
  std::int32_t wafer = -1;
  // The prefill of this many prompt tokens before the token (0: none; the token then at
  // position `prefill`), on a region at most twice as long as wide (models/mesh/mesh_prefill.h): each simulated
  // layer's products by MeshGEMM, its norms and causal attention token by token, the KV cache
  // filled from its keys and values. Token i of the prompt is i mod the vocabulary.
  std::uint64_t prefill = 0;
  // Shift steps of each product simulated (0: all N; else M >= 2: runs of 1 and M steps, the
  // other steps taking the difference's per-step cycles). Functional runs (`check`) simulate
  // all N: the products' results must be complete.
  std::uint32_t gemm_steps = 3;
  // The prefill's products only (timing-only): not its token-by-token kernels.
  bool prefill_products = false;
  // The token-by-token kernels of a sample of the prompt's tokens only (timing-only), each
  // standing for its run of tokens (models/mesh/mesh_prefill.h, sample_prompt).
  bool prefill_sampled = false;
  // Attention's groups of prompt tokens hold at most this many (fewer where their buffers do
  // not fit a PE's SRAM; models/mesh/mesh_prefill.h).
  std::uint32_t prefill_group = models::mesh::MeshPrefill::kDefaultGroup;
  // The prefill in passes of this many prompt tokens (models/mesh/mesh_prefill.h; 0: the
  // plan's, one pass unless MeshGEMM's blocks of the whole prompt do not fit).
  std::uint64_t prefill_chunk = 0;
  // Each distinct region built, run and freed in a process of its own, one after the other
  // (wafer_process.h): the run's peak memory is one wafer's, not one per region. Contract:
  // no SystemC simulation has started in this process.
  bool separate = false;
  // --max-wall over the whole run (--max-cycles is BuildOptions::max_cycles, per wafer).
  sim::RunLimits limits;
};

// One product of the prefill on one wafer: its simulated runs and its cycles over all N steps.
struct MeshPrefillStep {
  std::string name;
  std::uint32_t layer = 0;
  std::uint32_t steps = 0;                     // N
  std::uint32_t simulated = 0;                 // steps simulated in the longer run (N: all)
  std::uint64_t cycles_one = 0, cycles_m = 0;  // the runs of 1 and `simulated` steps
  std::uint64_t cycles = 0;                    // all N steps (simulated or derived)
  models::mesh::StepBound bound;               // of all N steps
  std::uint64_t flops = 0;
};

// The prefill's other kernels on one wafer, token by token (embedding, rmsnorm, attention, and
// block and unblock: the moves between the decode's vectors and the GEMM's blocks): their
// steps and cycles summed over the simulated layers and the prompt's tokens.
struct MeshPrefillKernel {
  std::string kernel;
  models::mesh::PrefillPer per = models::mesh::PrefillPer::Layer;
  std::uint64_t steps = 0, cycles = 0;
  std::uint64_t simulated = 0;  // of `steps`: the others take a sampled token's cycles
  std::uint64_t bound = 0;      // the steps' bounds (roofline or the collectives' latency), summed
};

struct MeshWaferRun {
  std::vector<std::uint32_t> wafers;  // the plan's wafers with this region (and this run's steps)
  std::uint32_t simulated_layers = 0;
  MeshRunResult run;
  std::vector<MeshPrefillStep> prefill;  // the simulated layers' products
  std::vector<MeshPrefillKernel> prefill_kernels;
  std::uint32_t prefill_group = 0;  // tokens in attention's groups on this region (0: no prefill)
  double wall_seconds = 0;
  std::uint64_t compared = 0, mismatches = 0;
  std::string first_mismatch;
  unsigned rank = 0;  // the MPI rank that simulated it (0 in one process)
};

struct MeshToken {
  models::mesh::MeshPlan plan;
  std::vector<MeshWaferRun> runs;
  // The token: embedding, every layer of every wafer, final norm and head, links.
  std::uint64_t embed_cycles = 0, layer_cycles = 0, head_cycles = 0, link_cycles = 0;
  std::uint64_t layers_simulated = 0, layers_total = 0;
  std::int32_t only_wafer = -1;  // MeshTokenOptions::wafer: the figures are that wafer's part
  // The prefill over every layer (each layer of a wafer at its simulated layers' cycles, the
  // embedding once): products, the other kernels, and both summed.
  std::uint64_t prefill_tokens = 0, prefill_gemm_cycles = 0, prefill_other_cycles = 0, prefill_cycles = 0;
  bool prefill_sampled = false;     // MeshTokenOptions::prefill_sampled
  std::uint32_t prefill_group = 0;  // the largest of the runs' groups
  std::uint64_t prefill_chunk = 0;  // tokens a pass of the prefill (prefill_tokens: one pass)
  [[nodiscard]] std::uint64_t cycles() const { return embed_cycles + layer_cycles + head_cycles + link_cycles; }
};

// The token's simulations, one wafer of the platform for each distinct region of the plan,
// built at construction (before the simulation starts) under `root`'s statistics, or with
// MeshTokenOptions::separate each in its own process when run (its statistics copied).
class MeshTokenSimulation {
 public:
  // Contract: throws sim::InputError for a model the mesh does not cover or that does not
  // fit, for a position beyond the cache, a token beyond the vocabulary or a wafer beyond the
  // plan's. Keep this object
  // while `root`'s statistics are read.
  MeshTokenSimulation(const PlatformSpec& spec, const models::ModelSpec& model, const MeshTokenOptions& o,
                      BuildOptions build, sim::stats::Group& root);
  ~MeshTokenSimulation();
  MeshTokenSimulation(const MeshTokenSimulation&) = delete;
  MeshTokenSimulation& operator=(const MeshTokenSimulation&) = delete;
  [[nodiscard]] const models::mesh::MeshPlan& plan() const { return plan_; }
  // Runs every simulation once, in the plan's wafer order. Over several processes (`ranks`
  // of an MPI launch, with separate runs) the distinct regions are shared out in order
  // (sim::parallel::rank_items); each rank runs its own as separate runs do and sends them to
  // rank 0, which returns the one-process run's token and statistics; the other ranks return
  // an empty token. Throws sim::InputError for more ranks than distinct regions.
  MeshToken run(const StepDone& done = {}, sim::parallel::Transport* ranks = nullptr);

 private:
  struct WaferSim;
  [[nodiscard]] std::unique_ptr<WaferSim> make_sim(const std::vector<std::uint32_t>& wafers,
                                                   sim::stats::Group& root) const;
  [[nodiscard]] MeshWaferRun run_sim(WaferSim& w, const StepDone& done) const;
  // A separate run of a region in a child process: its bytes, and the run read back from them
  // (its statistics added under root_).
  [[nodiscard]] std::string run_in_child(const std::vector<std::uint32_t>& wafers, const StepDone& done);
  [[nodiscard]] MeshWaferRun read_run(const std::vector<std::uint32_t>& wafers, const std::string& bytes);
  void add(MeshToken& t, MeshWaferRun run) const;
  models::mesh::MeshPlan plan_;
  MeshTokenOptions o_;
  PlatformSpec one_;  // the platform with one system
  BuildOptions build_;
  models::mesh::MeshTarget target_;
  sim::stats::Group* root_;
  std::vector<std::vector<std::uint32_t>> regions_;           // the plan's wafers by distinct region
  std::vector<std::unique_ptr<WaferSim>> sims_;               // one per region, unless separate
  std::vector<std::unique_ptr<sim::stats::Histogram>> kept_;  // the separate runs' distributions
};

// The plan's target on a platform.
models::mesh::MeshTarget mesh_target(const PlatformSpec& spec);

}  // namespace wafersim::platforms::inference

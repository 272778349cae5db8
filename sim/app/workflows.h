#pragma once
// The options and bodies of the three simulating workflows: `run` (a platform, idle or one
// step of a compiled model's programs), `train` (weight-streaming training on a cluster) and
// `infer` (inference, weights resident or streamed). Each command's file adds its options and
// calls its body; `run` also takes the older spellings (`run --train`, `run --inference`)
// and hands them on with a one-line notice.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "memoryx/optimizer.h"
#include "models/model_spec.h"
#include "sim/app/cli.h"
#include "sim/app/model_report.h"
#include "sim/app/trace_args.h"

namespace wafersim::app {

// How the results of a model run are checked.
struct CheckArgs {
  bool no_check = false;
  bool timing_only = false;
  bool plan_missing_code = false;
  void add(CLI::App& cmd);
};

// Weight-streaming training's own options.
struct TrainArgs {
  std::uint32_t steps = 1;
  bool functional = false;
  std::string wafer_arithmetic;  // empty: the mode's own (replay: host; cosim: the programs')
  std::string timing = "simulated";
  std::string cluster_model = "cosim";
  std::string optimizer = "adam";
  float learning_rate = 1e-3F;
  CLI::Option* optimizer_option = nullptr;
  CLI::Option* learning_rate_option = nullptr;
  std::vector<std::string> fails;  // --fail system:K@STEP (wafersim train)
  // `group`: the help group ("" hides them: the older `run --train` spelling).
  void add(CLI::App& cmd, const std::string& group);
  // The model file's optimizer (its `optimizer:` section, --model-set included) with
  // --optimizer and --learning-rate applied when given, its schedule spanning the run's steps
  // unless the file sets them; sim::InputError when the result is out of range.
  [[nodiscard]] memoryx::OptimizerConfig optimizer_for(const models::ModelSpec& model) const;
};

// Inference's own options.
struct InferArgs {
  std::uint64_t prompt_len = 0;
  std::uint64_t decode_tokens = 0;
  bool token_by_token = false;
  bool pipeline = false;
  std::uint32_t pipeline_replicas = 0;
  std::string pipeline_cut = "rows-out";
  std::string mesh_layers = "1";            // mesh placement: layers simulated on each wafer, or "all"
  std::uint64_t token = 1;                  // mesh placement: the decode token's id
  std::string mesh_region;                  // mesh placement: ROWSxCOLUMNS instead of the planner's region
  std::int32_t mesh_wafer = -1;             // mesh placement: only this wafer of the plan (-1: all)
  std::uint64_t prefill = 0;                // mesh placement: prompt tokens prefilled before the token
  std::string mesh_gemm_steps = "3";        // mesh placement: MeshGEMM shift steps simulated, or "all"
  bool mesh_prefill_products = false;       // mesh placement: the prefill's products only
  std::uint32_t mesh_prefill_group = 64;    // mesh placement: most tokens in the prefill's attention groups
  std::string mesh_prefill_tokens = "all";  // mesh placement: the prefill's token-by-token steps, all or sampled
  std::uint64_t mesh_prefill_chunk = 0;     // mesh placement: prompt tokens a pass of the prefill (0: the plan's)
  void add(CLI::App& cmd, const std::string& group);
  [[nodiscard]] bool any() const { return prompt_len || decode_tokens || token_by_token || pipeline; }
};

// Everything a simulating workflow reads.
struct Workflow {
  PlatformArgs platform;
  SimArgs sim;
  ModelArgs model;
  TraceArgs trace;
  CheckArgs check;
  // --fail: links and PEs failing while a compiled model runs on wafer 0 (run, infer);
  // platforms::FailureSpec's forms.
  std::vector<std::string> fails;
};

// Adds --fail (repeatable) for a command running a compiled model on one wafer.
void add_fail_option(CLI::App& cmd, std::vector<std::string>& fails);

// K training steps of `w.model` on the platform's cluster; writes the run folder and prints
// the per-step breakdown.
void train(const Workflow& w, const TrainArgs& t);

// Inference of `w.model` on the platform: weight streaming (forward on wafer 0) or weights
// resident (the prefill, decode steps after it, or the pipeline over regions).
void infer(const Workflow& w, const InferArgs& i);

// Prints, once per process, that `old_spelling` is now `new_spelling` (stderr).
void note_new_spelling(const std::string& old_spelling, const std::string& new_spelling);

}  // namespace wafersim::app

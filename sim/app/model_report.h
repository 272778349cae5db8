#pragma once
// What `wafersim compile` and `wafersim run --model` print and write: a compiled model's
// mapping (per layer: region, SRAM, colors, wavelets, FLOPs, bound) and a run's per-layer
// figures beside it.

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <deque>
#include <iosfwd>
#include <string>
#include <vector>

#include "models/compiler/compiled_model.h"
#include "platforms/platform_spec.h"
#include "platforms/runtime/executor.h"

namespace wafersim::app {

// The compile options every model command takes.
struct ModelArgs {
  std::string model;
  std::vector<std::string> set;
  std::string placement = "streaming";
  std::string accumulate = "fp32";
  bool inference = false;
  std::string layout = "auto";
  std::string recompute = "auto";
  // Which command the options are for: compile and run take them all; train no --placement
  // and --inference (training streams weights); infer no --inference (and resident placement
  // by default).
  enum class Use : std::uint8_t { Compile, Run, Train, Infer };
  // Adds --model-set, --accumulate, --layout and, by `use`, --placement and --inference (the
  // model itself is added by the command: positional for compile, --model for the others).
  void add(CLI::App& cmd, Use use);
  [[nodiscard]] models::compiler::CompileOptions options(bool emit) const;
  [[nodiscard]] models::LoadedModel load() const;
};

// Table cells of the model reports: bytes with an SI prefix; a count in full below 100,000,
// with an SI prefix above.
std::string bytes_cell(double b);
std::string count_cell(double n);

nlohmann::ordered_json mapping_json(const models::compiler::CompiledModel& cm, const std::string& platform);
void print_mapping(std::ostream& out, const models::compiler::CompiledModel& cm, const std::string& platform);

// One step's figures: simulated beside the bound.
nlohmann::ordered_json run_json(const models::compiler::CompiledModel& cm,
                                const std::deque<platforms::runtime::StepResult>& results);
void print_run(std::ostream& out, const models::compiler::CompiledModel& cm,
               const std::deque<platforms::runtime::StepResult>& results);

}  // namespace wafersim::app

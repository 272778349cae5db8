#pragma once
// A decode token of a mesh-placed decoder run on a simulated wafer (docs/compiler.md, "Mesh
// placement"): each step's programs loaded onto every PE of the region when the step before
// has ended everywhere (as one program that synchronises at the step's boundary), run cycle
// by cycle, its cycles and bound recorded; in functional mode the host first writes every
// PE's weights, cache and inputs (untimed, like loading code) and reads results back after.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/mesh/mesh_decode.h"
#include "platforms/cluster.h"
#include "platforms/wafer.h"
#include "sim/run_loop.h"
#include "sim/stats/stats.h"

namespace wafersim::platforms::inference {

struct MeshStepResult {
  std::string name, kernel;
  std::uint32_t layer = 0;
  std::uint64_t start = 0, end = 0;  // cycles [start, end)
  models::mesh::StepBound bound;
  std::uint64_t flops = 0;           // the step's useful FLOPs
  std::uint64_t busy_pe_cycles = 0;  // summed over the region's PEs
  [[nodiscard]] std::uint64_t cycles() const { return end - start; }
};

struct MeshRunResult {
  std::vector<MeshStepResult> steps;
  std::uint64_t start = 0, end = 0;
  [[nodiscard]] std::uint64_t cycles() const { return end - start; }
};

// The bytes to write into PE (r, c) of the region before the run ([0, size)), or none.
using PeImage = std::function<std::vector<std::uint8_t>(std::uint32_t r, std::uint32_t c)>;
using StepDone = std::function<void(const MeshStepResult&)>;

// Contract: `wafer` was built with d.routes(); runs every step of `d` in order. Throws
// sim::SimulationError on a program error or a deadlock (naming the step), sim::LimitReached
// when `limits` stop a step (--max-wall; --max-cycles is the wafer's BuildOptions::max_cycles).
MeshRunResult run_mesh_decode(const models::mesh::MeshDecode& d, Wafer& wafer, const PeImage& image = {},
                              const StepDone& done = {}, const sim::RunLimits& limits = {});

// Runs `count` steps built by `step(i)` over `region` in order, likewise (run_mesh_decode runs
// a token's steps with it).
using StepOf = std::function<models::mesh::MeshStep(std::size_t)>;
MeshRunResult run_mesh_steps(const models::mesh::Region& region, const models::compiler::Target& target,
                             std::size_t count, const StepOf& step, Wafer& wafer, const PeImage& image = {},
                             const StepDone& done = {}, const sim::RunLimits& limits = {});

// Reads n values of `bytes` each at `addr` of PE (r, c) of the region (untimed).
std::vector<std::uint64_t> read_pe(Wafer& wafer, const models::mesh::Region& region, std::uint32_t r, std::uint32_t c,
                                   std::uint32_t addr, std::uint32_t n, std::uint32_t bytes);

// The decode token on wafer 0 of a platform: the platform assembled with the token's routes.
class MeshSimulation {
 public:
  // Contract: `d` must outlive this. `limits` (--max-wall) hold for every run of it.
  MeshSimulation(const PlatformSpec& spec, BuildOptions build, sim::stats::Group& root,
                 const models::mesh::MeshDecode& d, sim::RunLimits limits = {});
  // Runs the token (run_mesh_decode) and adds its figures to wafer 0's "mesh" statistics.
  MeshRunResult run(const PeImage& image = {}, const StepDone& done = {});
  // Runs other steps on the token's region and routes (the prefill's), without statistics.
  MeshRunResult run_steps(std::size_t count, const StepOf& step, const PeImage& image = {}, const StepDone& done = {});
  [[nodiscard]] Wafer& wafer() { return cluster_->wafer(0); }

 private:
  const PlatformSpec& spec_;
  const models::mesh::MeshDecode& d_;
  sim::RunLimits limits_;
  std::unique_ptr<Cluster> cluster_;
};

}  // namespace wafersim::platforms::inference

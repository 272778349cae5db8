#pragma once
// The gradients of each wafer in a functional training run: every wafer assembles the weights
// MemoryX streams to it, runs the model's forward and backward on its shard of the step's
// batch of a synthetic task and returns each gradient chunk its backward weight chunk asks
// for. The arithmetic is the host reference's (models/reference), in the wafer's order, or
// served from a trajectory of the compiled programs' gradients (serve), each checked against
// the weights it was computed from (docs/training.md).

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "models/reference/task.h"
#include "platforms/edge/model_endpoint.h"
#include "platforms/training/cluster_model.h"
#include "platforms/training/program_trajectory.h"

namespace wafersim::platforms::training {

class ReplicaGradients {
 public:
  // `replicas` wafers share a global batch of `batch` samples per step: wafer e takes samples
  // [e batch/N, (e+1) batch/N) (as reference::data_parallel_gradients). Throws
  // sim::InputError when the batch does not split evenly.
  ReplicaGradients(const models::reference::Model& model, ClusterModel layers,
                   const models::reference::SyntheticTask& task, std::uint64_t batch, std::uint32_t replicas);

  // Hooks for platforms::edge::ModelEndpointConfig (weights_seen, gradient); they keep a
  // shared pointer to this object.
  static void attach(const std::shared_ptr<ReplicaGradients>& self, platforms::edge::ModelEndpointConfig& ec);

  // Serves the trajectory's gradients instead of computing them: wafer e's step s gets
  // trajectory.gradients[s][e], after a bit-for-bit check that the weights it received equal
  // trajectory.weights[s] (sim::SimulationError naming the first difference otherwise).
  void serve(std::shared_ptr<const ProgramTrajectory> trajectory) { trajectory_ = std::move(trajectory); }

  // A resumed training: the cluster's step s draws the task's batch of step first_step + s.
  void start_at(std::uint32_t first_step) { first_step_ = first_step; }

  // Mean loss over the wafers of each step computed so far (the loss of the weights the step used).
  [[nodiscard]] std::vector<double> step_losses() const;

 private:
  void weights_seen(std::uint32_t e, const sim::stream::ChunkInfo& info, const std::vector<float>& w);
  void gradient(std::uint32_t e, const sim::stream::ChunkInfo& info, std::vector<float>& out);
  void compute(std::uint32_t e, std::uint32_t step);

  const models::reference::Model& model_;
  ClusterModel layers_;
  const models::reference::SyntheticTask& task_;
  std::uint64_t batch_;
  std::uint32_t replicas_;
  std::uint32_t first_step_ = 0;
  std::shared_ptr<const ProgramTrajectory> trajectory_;
  std::vector<std::vector<std::vector<float>>> weights_;  // per wafer, per layer: as streamed to it
  std::vector<std::vector<std::uint32_t>> kept_;          // per sparse layer: kept positions, increasing
  struct Computed {
    std::vector<std::vector<float>> gradients;  // per layer, fp32
    std::uint64_t served = 0;                   // chunks handed out
    std::uint64_t total = 0;
  };
  std::map<std::pair<std::uint32_t, std::uint32_t>, Computed> computed_;  // (wafer, step)
  std::map<std::uint32_t, std::vector<double>> losses_;                   // step -> per wafer
};

}  // namespace wafersim::platforms::training

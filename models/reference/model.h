#pragma once
// The whole-model reference: parameters, forward, loss and backward over a models::ModelSpec
// graph, in the model's storage format or in fp64 (the exact mode for gradient checks).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/model_spec.h"
#include "models/reference/tensor.h"

namespace wafersim::models::reference {

using TensorMap = std::map<std::string, Tensor>;

// One parameter tensor: "<layer>.weight" (linear/gemv K x N, embedding V x d),
// "<layer>.bias" (N), "<layer>.positions" (S x d), "<layer>.gamma", "<layer>.beta" (d).
struct ParameterInfo {
  std::string name;
  std::string layer;
  Shape shape;
  double init_lo = 0, init_hi = 0;  // uniform range of initial_parameters (equal: a constant)
};

// A batch: activations in the storage format and token ids / labels, by input name.
struct Inputs {
  std::map<std::string, Tensor> activations;
  std::map<std::string, TokenIds> ids;
  [[nodiscard]] std::uint64_t batch() const;
  [[nodiscard]] Inputs batch_slice(std::uint64_t first, std::uint64_t count) const;
};

struct Forward {
  TensorMap values;  // every layer's output by layer name; a cross-entropy layer's is its loss
  Tensor loss;       // [1, 1, 1], accumulation format: the cross-entropy losses summed in layer order
  [[nodiscard]] double loss_value() const { return loss.size() ? loss.value(0) : 0.0; }
};

struct Gradients {
  TensorMap parameters;   // accumulation format, by parameter name
  TensorMap activations;  // storage format: every layer output's and activation input's gradient
};

class Model {
 public:
  // `format` is the storage format: format_of(spec.dtype) for the model as described, or fp64.
  Model(ModelSpec spec, Format format);
  explicit Model(ModelSpec spec);

  [[nodiscard]] const ModelSpec& spec() const { return spec_; }
  [[nodiscard]] Format format() const { return format_; }
  // Master weights and weight gradients: fp32 (fp64 in the exact mode).
  [[nodiscard]] Format master_format() const { return accumulation_of(format_); }
  [[nodiscard]] const std::vector<ParameterInfo>& parameters() const { return parameters_; }

  // Every parameter in the master format: uniform in its range from the stream
  // derive_seed(seed, name) (Tensor::uniform), or its constant (gamma 1, bias and beta 0).
  [[nodiscard]] TensorMap initial_parameters(std::uint64_t seed) const;

  // Master parameters are rounded once to the storage format, then every layer runs in order.
  // The batch size comes from the inputs; the sequence must be the model's. Throws
  // sim::InputError for a missing or misshapen input or parameter.
  [[nodiscard]] Forward forward(const TensorMap& parameters, const Inputs& inputs) const;

  // Layers in reverse order. Each cross-entropy layer is seeded with d(loss) = 1; `seeds` adds
  // gradients of other tensors from outside the graph. The gradient of a tensor read by several
  // layers is the sum of their contributions in forward order of the readers (and input order
  // within one), accumulated in the accumulation format from the first and rounded once; a
  // tied embedding's weight gradient is its own plus each tied linear's transposed dW, in
  // layer order, in the accumulation format.
  [[nodiscard]] Gradients backward(const TensorMap& parameters, const Inputs& inputs, const Forward& forward,
                                   const TensorMap& seeds = {}) const;

  // Allowed error of every parameter gradient when its reduction over rows runs in another
  // order (rows split over data-parallel replicas, partial sums combined by SwarmX):
  // reduction_tolerance over the batch's rows with sum_abs the sum of |terms|.
  [[nodiscard]] std::map<std::string, std::vector<double>> row_order_tolerance(const Inputs& inputs,
                                                                               const Forward& forward,
                                                                               const Gradients& gradients) const;

 private:
  ModelSpec spec_;
  Format format_;
  std::vector<ParameterInfo> parameters_;
};

}  // namespace wafersim::models::reference

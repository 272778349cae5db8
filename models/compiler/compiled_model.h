#pragma once
// A model compiled for one wafer: the layout, the routes, where every activation lives and
// the layer programs in the order they run.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/route_table.h"
#include "models/compiler/colors.h"
#include "models/compiler/feature_map.h"
#include "models/compiler/layer_program.h"
#include "models/compiler/layout.h"
#include "models/compiler/target.h"
#include "models/model_spec.h"

namespace wafersim::models::compiler {

enum class PlacementKind : std::uint8_t { Streaming, Resident };
const char* to_string(PlacementKind p);

// How partial sums of products accumulate: in fp32 (fmac.f32.f16: FP32 partials, which the
// SRAM ports feed at half the FP16 rate) or in the model's number format (full rate).
enum class Accumulate : std::uint8_t { Fp32, Native };
const char* to_string(Accumulate a);

// The activation layout of the weight-streaming placement: chosen by the rule (auto), tokens
// along all columns and the hidden dimension over all rows (columns), or row groups each
// holding the hidden dimension for its share of the tokens (groups; an error when none fits).
enum class LayoutChoice : std::uint8_t { Auto, Columns, Groups };
const char* to_string(LayoutChoice c);

// Training: which activations stay resident from the forward pass to the backward pass.
// None: every layer's output the backward reads. Blocks: only what crosses a transformer
// block's boundary (its input, the residual stream); the block's other activations are
// recomputed by running its forward steps again just before its backward (the weights
// stream in once more). Auto: None when its activations fit the SRAM, else Blocks.
enum class Recompute : std::uint8_t { Auto, None, Blocks };
const char* to_string(Recompute r);

struct CompileOptions {
  PlacementKind placement = PlacementKind::Streaming;
  Accumulate accumulate = Accumulate::Fp32;
  bool training = true;  // forward and backward; false: forward only (inference)
  bool emit = true;      // generate per-PE code and stream schedules (false: the mapping only)
  // With emit: a step the code generator cannot lower (its kind has no PE code, or the layout
  // is beyond what code generation supports) is planned analytically (its code stays empty)
  // instead of being an error.
  bool plan_missing_code = false;
  LayoutChoice layout = LayoutChoice::Auto;
  Recompute recompute = Recompute::Auto;
};

// A tensor resident on the wafer, at the same address on every used PE: activation-shaped
// (an input, a layer's output, a gradient; features divided among the rows by `map`, tokens
// among the columns, feature-major per PE) or per token (`width` values per token, such as
// token ids or per-token statistics, the same on every row of a column).
struct Tensor {
  std::string name;
  std::uint64_t features = 0;  // 0: a per-token tensor
  FeatureMap map;
  std::uint32_t width = 1;  // per-token tensors
  hw::DType dtype = hw::DType::F16;
  std::uint32_t addr = 0;
  std::uint32_t bytes = 0;  // per PE, for the largest slice
  [[nodiscard]] bool per_token() const { return features == 0; }
};

// A tensor that lives on the host side (MemoryX in a cluster): parameters and their gradients.
struct HostTensor {
  std::string name;
  std::vector<std::uint64_t> shape;  // row-major
  bool gradient = false;
  [[nodiscard]] std::uint64_t elements() const {
    std::uint64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

struct CompiledModel {
  Target target;
  ModelSpec model;
  CompileOptions options;
  StreamingLayout layout;
  ColorPlan colors;
  std::shared_ptr<fabric::RouteTable> routes;
  std::vector<Tensor> tensors;
  std::vector<HostTensor> host_tensors;
  std::vector<LayerProgram> programs;  // in execution order
  std::uint32_t sram_peak = 0;         // highest SRAM address any layer uses (bytes per PE)
  std::string layout_reason;           // why this layout (the sequence : hidden rule)
  std::string layout_why;              // the choice between one group and row groups, with its figures
  bool recomputed = false;             // training: blocks' activations recomputed in backward (Recompute)
  std::string recompute_why;           // why (the activations' peak without recomputation)

  [[nodiscard]] int tensor(const std::string& name) const;
  [[nodiscard]] int host_tensor(const std::string& name) const;
  [[nodiscard]] hw::DType dtype() const;
};

hw::DType hw_dtype(DType d);

}  // namespace wafersim::models::compiler

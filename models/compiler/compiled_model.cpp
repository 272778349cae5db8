#include "models/compiler/compiled_model.h"

#include "models/compiler/layer_program.h"

namespace wafersim::models::compiler {

const char* to_string(PlacementKind p) { return p == PlacementKind::Streaming ? "streaming" : "resident"; }
const char* to_string(Accumulate a) { return a == Accumulate::Fp32 ? "fp32" : "native"; }
const char* to_string(LayoutChoice c) {
  return c == LayoutChoice::Auto ? "auto" : c == LayoutChoice::Columns ? "columns" : "groups";
}

const char* to_string(Recompute r) { return r == Recompute::Auto ? "auto" : r == Recompute::None ? "none" : "blocks"; }

const char* to_string(Phase p) {
  switch (p) {
    case Phase::Forward:
      return "forward";
    case Phase::BackwardData:
      return "backward-data";
    case Phase::BackwardWeights:
      return "backward-weights";
  }
  return "?";
}

const char* to_string(Binding b) {
  switch (b) {
    case Binding::Compute:
      return "compute";
    case Binding::SramPorts:
      return "sram";
    case Binding::Fabric:
      return "fabric";
    case Binding::EdgeIo:
      return "edge";
  }
  return "?";
}

hw::DType hw_dtype(DType d) {
  switch (d) {
    case DType::FP16:
      return hw::DType::F16;
    case DType::BF16:
      return hw::DType::BF16;
    case DType::FP32:
      return hw::DType::F32;
  }
  return hw::DType::F16;
}

int CompiledModel::tensor(const std::string& name) const {
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name) return static_cast<int>(i);
  return -1;
}

int CompiledModel::host_tensor(const std::string& name) const {
  for (std::size_t i = 0; i < host_tensors.size(); ++i)
    if (host_tensors[i].name == name) return static_cast<int>(i);
  return -1;
}

hw::DType CompiledModel::dtype() const { return hw_dtype(model.dtype); }

}  // namespace wafersim::models::compiler

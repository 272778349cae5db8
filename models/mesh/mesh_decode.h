#pragma once
// A decode token of a mesh-placed decoder on one wafer (docs/compiler.md, "Mesh placement"):
// its steps in order (the embedding on the first wafer, per layer ln1, qkv, attn, o, ln2,
// gate_up, down, and on the last wafer ln_f and the head), the routes they share, and each
// step's programs, built when asked for so that a whole model's steps never sit in memory at
// once.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/route_table.h"
#include "models/compiler/target.h"
#include "models/mesh/kernels.h"
#include "models/mesh/layout.h"

namespace wafersim::models::mesh {

struct StepId {
  enum class Kind : std::uint8_t { Embed, Ln1, Qkv, Attn, O, Ln2, GateUp, Down, LnF, Head };
  Kind kind = Kind::Embed;
  std::uint32_t layer = 0;
};
const char* to_string(StepId::Kind k);

class MeshDecode {
 public:
  // Contract: the layout is for `target`'s wafer; `position` < the cache's capacity and
  // `token` < the vocabulary. The steps cover layers [0, simulated) of the layout's layers
  // (the layout keeps every layer's state; the rest run the same code at other addresses).
  MeshDecode(const compiler::Target& target, std::shared_ptr<const MeshLayout> layout, std::uint64_t position,
             std::uint64_t token, std::uint32_t simulated);

  [[nodiscard]] const MeshLayout& layout() const { return *layout_; }
  [[nodiscard]] const compiler::Target& target() const { return target_; }
  [[nodiscard]] const std::shared_ptr<fabric::RouteTable>& routes() const { return routes_; }
  [[nodiscard]] const std::vector<StepId>& steps() const { return steps_; }
  [[nodiscard]] std::uint64_t position() const { return position_; }
  [[nodiscard]] std::uint64_t token() const { return token_; }
  [[nodiscard]] std::uint32_t simulated_layers() const { return simulated_; }
  // Step i with its programs (or only its work and bound: cheap, for reports).
  [[nodiscard]] MeshStep step(std::size_t i, bool code = true) const;

 private:
  compiler::Target target_;
  std::shared_ptr<const MeshLayout> layout_;
  std::uint64_t position_ = 0, token_ = 0;
  std::uint32_t simulated_ = 0;
  std::vector<StepId> steps_;
  std::shared_ptr<fabric::RouteTable> routes_;
};

// The steps of one token on a layout without their programs (work and bounds, cheap): the
// embedding when the layout holds it, layer 0's seven, and the final norm and head when it
// holds them (for reports: every layer's steps have layer 0's bounds).
std::vector<MeshStep> step_bounds(const compiler::Target& target, const MeshLayout& layout, std::uint64_t position,
                                  std::uint64_t token);

}  // namespace wafersim::models::mesh

#pragma once
// Printing the mesh placement (`wafersim compile --placement mesh`: the plan and each kernel's
// bound) and a simulated decode token (`wafersim infer --placement mesh`: each step's cycles
// against its bound, the token's time and tokens/s): text and JSON.

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <utility>

#include "models/mesh/mesh_plan.h"
#include "platforms/inference/mesh_token.h"

namespace wafersim::app {

// "ROWSxCOLUMNS" (e.g. 448x512) for --mesh-region; throws sim::InputError naming the text.
std::pair<std::uint32_t, std::uint32_t> parse_mesh_region(const std::string& text);

nlohmann::ordered_json mesh_plan_json(const models::mesh::MeshPlan& plan, const models::compiler::Target& target,
                                      const models::ModelSpec& model, const std::string& platform,
                                      std::uint64_t position);
void print_mesh_plan(std::ostream& out, const models::mesh::MeshPlan& plan, const models::compiler::Target& target,
                     const models::ModelSpec& model, const std::string& platform, std::uint64_t position);

nlohmann::ordered_json mesh_token_json(const platforms::inference::MeshToken& t, const models::ModelSpec& model,
                                       const std::string& platform, double clock_hz, std::uint64_t position);
void print_mesh_token(std::ostream& out, const platforms::inference::MeshToken& t, const models::ModelSpec& model,
                      const std::string& platform, double clock_hz, std::uint64_t position);

}  // namespace wafersim::app

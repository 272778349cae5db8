#pragma once
// The pipeline's colors and routes: within a stage's column the rows relay their outputs south
// on two colors alternating by row (so a router never has a color both into and out of its
// ramp), the bottom row sends them east, and the next column takes them as a broadcast up the
// column; the stages alternate between two pairs of colors by parity (docs/compiler.md, "The
// pipeline, simulated").

#include <cstddef>
#include <cstdint>

#include "models/resident/resident_pipeline.h"

namespace wafersim::models::resident {

// Colors the routes of a pipeline of more than one stage use.
inline constexpr std::uint32_t kPipelineColors = 4;

// The relay color row y of stage `stage` sends on.
std::uint8_t relay_color(std::size_t stage, std::uint32_t y);
// The color stage `stage` (> 0) receives its input on: the one its predecessor's bottom row
// sends east on.
std::uint8_t input_color(const PipelineProgram& p, std::size_t stage);

// Contract: p's stages planned (columns, rows, replicas); sets p.routes (on p.target's grid) and
// p.colors: for every band and row of every stage its relay (ramp -> south, the bottom row
// east to the next column), the relay from the row above (north -> ramp; on the last stage
// only with rows-in, whose sums pass down), and the previous column's broadcast (west or
// south -> ramp and north).
void plan_routes(PipelineProgram& p);

}  // namespace wafersim::models::resident

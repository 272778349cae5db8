#pragma once
// Program -> assembly text (docs/isa.md "Assembly format") that the assembler reads back into
// the same program: for `wafersim compile --emit` and for debugging compiled layers.

#include <string>
#include <vector>

#include "hw/isa/program.h"

namespace wafersim::hw::isa {

// The text of instruction `pc` (labels as L<pc>, descriptors and tasks by name).
std::string instruction_text(const hw::isa::Program& p, std::uint32_t pc);
// One `.pe` section per placement: directives, labels and instructions.
std::string disassemble(const std::vector<hw::isa::Placement>& placements);

}  // namespace wafersim::hw::isa

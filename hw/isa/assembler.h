#pragma once
// The text assembly format for per-PE programs (docs/isa.md "Assembly format").

#include <string>
#include <string_view>
#include <vector>

#include "hw/isa/program.h"

namespace wafersim::hw::isa {

// Assembles one file into the programs of its `.pe` sections (a file without `.pe` is one
// program for PE (0, 0)).
// Contract: returns well-formed programs or throws sim::config::ConfigError listing every
// problem found as "FILE:LINE:COL: error: message"; never crashes on malformed text.
// Checks that need the platform (SRAM capacity, colors, grid size) happen when a program is
// loaded onto a core array.
std::vector<Placement> assemble(std::string_view text, const std::string& file_name);
// Reads and assembles a file; an unreadable file is a ConfigError naming it.
std::vector<Placement> assemble_file(const std::string& path);

}  // namespace wafersim::hw::isa

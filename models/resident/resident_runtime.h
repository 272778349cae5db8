#pragma once
// The host's side of a weight-resident run: the program that places every resident weight
// in SRAM once, before the first layer runs.

#include <cstdint>
#include <vector>

#include "models/resident/resident_program.h"
#include "models/runtime/host_data.h"

namespace wafersim::models::resident {

// Contract: fills rp.cm.programs[0] with one program per used row whose image holds that
// row's block of every resident matrix (and bias) at its address, in the order the products
// read them; its code only returns. Deterministic in `data`.
void place_weights(ResidentProgram& rp, const runtime::HostData& data);

// Appends the low `esz` bytes of `bits` to `out`, least significant first (an SRAM image).
void append_bits(std::vector<std::uint8_t>& out, std::uint32_t bits, std::uint32_t esz);

}  // namespace wafersim::models::resident

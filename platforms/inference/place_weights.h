#pragma once
// The host's side of a weight-resident run: the program that places every resident weight
// in SRAM once, before the first layer runs.

#include <cstdint>
#include <vector>

#include "models/resident/resident_program.h"
#include "platforms/runtime/host_data.h"

namespace wafersim::platforms::inference {

// Contract: fills rp.cm.programs[0] with one program per used row whose image holds that
// row's block of every resident matrix (and bias) at its address, in the order the products
// read them; its code only returns. Deterministic in `data`.
void place_weights(models::resident::ResidentProgram& rp, const runtime::HostData& data);

}  // namespace wafersim::platforms::inference

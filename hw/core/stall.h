#pragma once
// Why a thread of a PE (its task or one of its vector operations) could not progress in a cycle.

#include <cstdint>
#include <string_view>

namespace wafersim::hw {

enum class Stall : std::uint8_t {
  SramPort,     // every read (or write) port of the cycle was taken
  SramBank,     // a port was free but the bank was read by another access this cycle
  FabricIn,     // no data wavelet waiting on the input color
  FabricOut,    // no credit for the output color
  Ramp,         // the ramp's one wavelet in (or out) this cycle went to another thread
  Queue,        // the color is held by another vector operation
  Microthread,  // every microthread is busy
  Fpu,          // the vector datapath (or the iterative unit) is busy with another operation
};
inline constexpr int kStallCauses = 8;

std::string_view stall_name(Stall s);
std::string_view stall_description(Stall s);

}  // namespace wafersim::hw

#include "hw/core/stall.h"

namespace wafersim::hw {

std::string_view stall_name(Stall s) {
  switch (s) {
    case Stall::SramPort:
      return "sram_port";
    case Stall::SramBank:
      return "sram_bank";
    case Stall::FabricIn:
      return "fabric_in";
    case Stall::FabricOut:
      return "fabric_out";
    case Stall::Ramp:
      return "ramp";
    case Stall::Queue:
      return "queue";
    case Stall::Microthread:
      return "microthread";
    case Stall::Fpu:
      return "fpu";
  }
  return "?";
}

std::string_view stall_description(Stall s) {
  switch (s) {
    case Stall::SramPort:
      return "thread-cycles stalled: all SRAM read or write ports of the cycle taken";
    case Stall::SramBank:
      return "thread-cycles stalled: SRAM bank conflict between two reads";
    case Stall::FabricIn:
      return "thread-cycles stalled: fabric input empty (no data wavelet on the color)";
    case Stall::FabricOut:
      return "thread-cycles stalled: fabric output full (no credit on the color)";
    case Stall::Ramp:
      return "thread-cycles stalled: the ramp's one wavelet in or out this cycle taken by another thread";
    case Stall::Queue:
      return "thread-cycles stalled: the color is held by another vector operation";
    case Stall::Microthread:
      return "thread-cycles stalled: no free microthread for an async vector operation";
    case Stall::Fpu:
      return "thread-cycles stalled: vector datapath or iterative unit busy with another operation";
  }
  return "?";
}

}  // namespace wafersim::hw

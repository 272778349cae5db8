#pragma once
// A record of the packets a run injected into the mesh, in a versioned text format that
// `wafersim traffic --capture FILE` writes and `--replay FILE` reads (docs/replay.md):
//
//   wafersim-injections/1
//   mesh 8 8
//   colors 2
//   end_cycle 1534
//   cycle src_x src_y dst_x dst_y size
//   12 0 3 5 5 1
//   ...
//
// One packet a line, in creation order: the cycle it was created at its source's ramp queue,
// its source and destination PEs and its size in wavelets. '#' starts a comment.

#include <cstdint>
#include <string>
#include <vector>

#include "hw/types.h"

namespace wafersim::fabric::traffic {

struct InjectionRecord {
  std::uint64_t cycle = 0;
  hw::PeCoord src, dst;
  std::uint32_t size = 1;
};

struct InjectionTrace {
  static constexpr const char* kFormat = "wafersim-injections/1";
  std::uint32_t width = 0, height = 0;  // the mesh the run had
  std::uint32_t colors = 1;             // colors the packets took as virtual channels
  std::uint64_t end_cycle = 0;          // the cycle the run stopped at
  std::vector<InjectionRecord> records;
};

// Writes `trace` to `path`. Throws sim::InputError naming the file when it cannot.
void write_injection_trace(const std::string& path, const InjectionTrace& trace);

// Reads `path`. Throws sim::InputError as "FILE:LINE:COL: what was expected" for a
// missing or unknown header line, a bad number, a PE outside the mesh, a size of 0 or
// records out of cycle order.
InjectionTrace read_injection_trace(const std::string& path);

}  // namespace wafersim::fabric::traffic

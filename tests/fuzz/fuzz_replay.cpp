// libFuzzer target: an injection trace as `wafersim traffic --replay` reads it (docs/replay.md),
// written to a per-process file and read. Any input must load or end in an InputError.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "fabric/traffic/injection_trace.h"
#include "sim/errors.h"
#include "tests/fuzz/input_files.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("wafersim-fuzz-replay-" + std::to_string(::getpid()) + ".txt");
  wafersim::fuzz::write_file(file, std::string(reinterpret_cast<const char*>(data), size));
  try {
    const auto trace = wafersim::fabric::traffic::read_injection_trace(file.string());
    for (const auto& r : trace.records)
      if (r.src.x >= trace.width || r.src.y >= trace.height || r.dst.x >= trace.width || r.dst.y >= trace.height ||
          r.size == 0)
        __builtin_trap();  // the reader promises records inside the mesh it names
  } catch (const wafersim::sim::InputError&) {
  }
  return 0;
}

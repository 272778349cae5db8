#include "sim/stream/chunk.h"

#include <fmt/format.h>

namespace wafersim::sim::stream {

const char* to_string(Pass p) {
  switch (p) {
    case Pass::Forward:
      return "forward";
    case Pass::Backward:
      return "backward";
    case Pass::Gradient:
      return "gradient";
  }
  return "?";
}

std::string ChunkInfo::describe() const {
  return fmt::format("{} chunk {}/{} of layer {} (step {}, {} B at offset {})", to_string(pass), index, count, layer,
                     step, bytes, offset);
}

tlm::tlm_extension_base* ChunkExtension::clone() const {
  auto* e = new ChunkExtension;
  e->chunk = chunk;
  return e;
}

void ChunkExtension::copy_from(const tlm::tlm_extension_base& other) {
  chunk = static_cast<const ChunkExtension&>(other).chunk;
}

}  // namespace wafersim::sim::stream

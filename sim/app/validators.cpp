#include "sim/app/validators.h"

#include "hw/isa/assembler.h"
#include "platforms/platform_spec.h"

namespace wafersim::app {

std::string validate_file(const std::string& path, const std::vector<std::string>& overrides) {
  // Model, route-table and sweep files join this list as their parsers land.
  auto ends_with = [&](const char* ext) {
    const std::string e(ext);
    return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
  };
  if (ends_with(".s") || ends_with(".asm")) {
    hw::isa::assemble_file(path);
    return "PE program";
  }
  platforms::load_platform(path, overrides);
  return "platform";
}

}  // namespace wafersim::app

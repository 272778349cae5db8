#include "sim/app/validators.h"

#include "platforms/platform_spec.h"

namespace wafersim::app {

std::string validate_file(const std::string& path, const std::vector<std::string>& overrides) {
  // Model, program, route-table and sweep files join this list as their parsers land.
  platforms::load_platform(path, overrides);
  return "platform";
}

}  // namespace wafersim::app

#include "sim/app/validators.h"

#include <fstream>
#include <sstream>

#include "hw/isa/assembler.h"
#include "models/model_spec.h"
#include "platforms/platform_spec.h"

namespace wafersim::app {
namespace {

bool looks_like_model(const std::string& path) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  sim::config::Node raw;
  try {
    raw = sim::config::Loader::parse(ss.str(), path);
  } catch (const sim::config::ConfigError&) {
    return false;  // reported by the platform loader below
  }
  if (models::is_model_document(raw)) return true;
  if (!raw.find("base")) return false;
  try {
    sim::config::Loader loader(&models::builtin_models(), "models/presets");
    return models::is_model_document(loader.load(path));
  } catch (const sim::config::ConfigError&) {
    return false;
  }
}

}  // namespace

std::string validate_file(const std::string& path, const std::vector<std::string>& overrides) {
  // Route-table and sweep files join this list as their parsers land.
  auto ends_with = [&](const char* ext) {
    const std::string e(ext);
    return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
  };
  if (ends_with(".s") || ends_with(".asm")) {
    hw::isa::assemble_file(path);
    return "PE program";
  }
  if (looks_like_model(path)) {
    models::load_model(path, overrides);
    return "model";
  }
  platforms::load_platform(path, overrides);
  return "platform";
}

}  // namespace wafersim::app

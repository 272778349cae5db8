#include "sim/app/validators.h"

#include <fmt/format.h>

#include "hw/isa/assembler.h"
#include "models/model_spec.h"
#include "platforms/platform_spec.h"
#include "sim/app/cli.h"
#include "sim/app/sweep/plan.h"
#include "sim/config/input_file.h"
#include "sim/config/loader.h"
#include "sim/errors.h"

namespace wafersim::app {
namespace {

// The text of `path` when it is a readable YAML file within the size limit, else "" (the
// platform loader then reports why).
std::string yaml_text(const std::string& path) {
  if (!sim::config::unreadable_reason(path).empty()) return {};
  try {
    return sim::config::read_input_file(path, "the YAML file", sim::config::kMaxYamlBytes);
  } catch (const sim::Error&) {
    return {};
  }
}

bool looks_like_model(const std::string& path) {
  const std::string text = yaml_text(path);
  if (text.empty()) return false;
  sim::config::Node raw;
  try {
    raw = sim::config::Loader::parse(text, path);
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

// Whether the file on disk is a sweep file (a top-level `sweep:` mapping).
bool is_sweep_file(const std::string& path) {
  const std::string text = yaml_text(path);
  if (text.empty()) return false;
  try {
    return sweep::is_sweep_document(sim::config::Loader::parse(text, path));
  } catch (const sim::Error&) {
    return false;  // malformed: reported by the platform reader
  }
}

}  // namespace

std::string validate_file(const std::string& path, const std::vector<std::string>& overrides) {
  auto ends_with = [&](const char* ext) {
    const std::string e(ext);
    return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
  };
  if (ends_with(".s") || ends_with(".asm")) {
    hw::isa::assemble_file(path);
    return "PE program";
  }
  if (is_sweep_file(path)) {
    if (!overrides.empty()) throw sim::InputError(fmt::format("{}: --set applies to platform files, not sweeps", path));
    auto plan = sweep::Plan::make(path, sweep_catalog());
    return fmt::format("sweep of {} points", plan.points().size());
  }
  if (looks_like_model(path)) {
    models::load_model(path, overrides);
    return "model";
  }
  platforms::load_platform(path, overrides);
  return "platform";
}

}  // namespace wafersim::app

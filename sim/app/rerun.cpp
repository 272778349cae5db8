#include "sim/app/rerun.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include "sim/app/run_dir.h"
#include "sim/config/input_file.h"
#include "sim/errors.h"
#include "sim/version.h"

namespace wafersim::app {
namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "wafersim-rerun/1";

// "--out DIR" and "-o DIR" (the folder in the next argument).
bool is_output_option(const std::string& a) { return a == "--out" || a == "-o"; }
// "--out=DIR" and "-oDIR".
bool is_output_value(const std::string& a) {
  return a.rfind("--out=", 0) == 0 || (a.size() > 2 && a.rfind("-o", 0) == 0 && a[2] != '-');
}

void copy_file_to(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  if (!ec) fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) throw sim::InputError(fmt::format("cannot copy {} into the run folder: {}", from.string(), ec.message()));
}

// Relative paths below `base` that the YAML document names (any scalar that is one).
void referenced_files(const YAML::Node& n, const fs::path& base, std::set<fs::path>& out) {
  if (n.IsScalar()) {
    const fs::path p(n.Scalar());
    if (p.empty() || p.is_absolute()) return;
    for (const auto& part : p)
      if (part == "..") return;
    std::error_code ec;
    if (fs::is_regular_file(base / p, ec)) out.insert(p.lexically_normal());
  } else if (n.IsSequence()) {
    for (const auto& e : n) referenced_files(e, base, out);
  } else if (n.IsMap()) {
    for (const auto& kv : n) referenced_files(kv.second, base, out);
  }
}

bool is_yaml(const fs::path& p) { return p.extension() == ".yaml" || p.extension() == ".yml"; }

// Copies `file` to `folder / name` and, when it is YAML, the files it names in turn.
void copy_with_references(const fs::path& file, const fs::path& folder, const fs::path& name) {
  copy_file_to(file, folder / name);
  if (!is_yaml(file)) return;
  std::set<fs::path> refs;
  try {
    referenced_files(YAML::LoadFile(file.string()), file.parent_path(), refs);
  } catch (const YAML::Exception&) {
    return;  // the command reports the file's own errors
  }
  for (const fs::path& r : refs)
    if (!fs::exists(folder / name.parent_path() / r))
      copy_with_references(file.parent_path() / r, folder, name.parent_path() / r);
}

}  // namespace

std::vector<std::string>& invocation_args() {
  static std::vector<std::string> args;
  return args;
}

void capture_inputs(const fs::path& dir) {
  // Without the output folder: identical runs into different folders write the same file.
  std::vector<std::string> argv;
  for (std::size_t i = 0; i < invocation_args().size(); ++i) {
    const std::string& a = invocation_args()[i];
    if (is_output_option(a)) {
      ++i;
      continue;
    }
    if (!is_output_value(a)) argv.push_back(a);
  }
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["wafersim_version"] = std::string(sim::kVersion);
  j["argv"] = argv;
  j["cwd"] = fs::current_path().string();
  auto inputs = nlohmann::ordered_json::array();
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const auto eq = argv[i].rfind("--", 0) == 0 ? argv[i].find('=') : std::string::npos;
    const std::string prefix = eq == std::string::npos ? "" : argv[i].substr(0, eq + 1);
    const fs::path file = argv[i].substr(prefix.size());
    std::error_code ec;
    if (file.empty() || !fs::is_regular_file(file, ec)) continue;
    const fs::path copy = fs::path("inputs") / std::to_string(inputs.size()) / file.filename();
    copy_with_references(file, dir / "inputs" / std::to_string(inputs.size()), file.filename());
    inputs.push_back({{"arg", i}, {"prefix", prefix}, {"original", argv[i].substr(prefix.size())}, {"copy", copy}});
  }
  j["inputs"] = std::move(inputs);
  write_file_atomic(dir / "rerun.json", j.dump(2) + "\n");
}

std::vector<std::string> rerun_args(const fs::path& run_dir, const std::string& out) {
  const fs::path file = run_dir / "rerun.json";
  if (!fs::exists(file))
    throw sim::InputError(
        fmt::format("{}: cannot read it (not a run folder, or one written before reruns)", file.string()));
  const nlohmann::json j = nlohmann::json::parse(
      sim::config::read_input_file(file.string(), "the rerun record", sim::config::kMaxJsonBytes), nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != kFormat || !j.contains("argv") ||
      !j["argv"].is_array() || !j.contains("inputs") || !j["inputs"].is_array())
    throw sim::InputError(fmt::format("{}: expected a {} file with argv and inputs", file.string(), kFormat));
  std::vector<std::string> argv;
  for (const auto& a : j["argv"]) {
    if (!a.is_string()) throw sim::InputError(fmt::format("{}: argv: expected a list of strings", file.string()));
    argv.push_back(a.get<std::string>());
  }
  for (const auto& in_file : j["inputs"]) {
    const auto arg = in_file.value("arg", std::size_t{0});
    if (arg == 0 || arg >= argv.size() || !in_file.contains("copy") || !in_file["copy"].is_string())
      throw sim::InputError(fmt::format("{}: inputs: expected {{arg, prefix, copy}} within argv", file.string()));
    const fs::path copy = fs::absolute(run_dir / in_file["copy"].get<std::string>());
    if (!fs::is_regular_file(copy))
      throw sim::InputError(fmt::format("{}: the run's input {} is missing", file.string(), copy.string()));
    argv[arg] = in_file.value("prefix", std::string()) + copy.string();
  }
  std::vector<std::string> args;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    if (is_output_option(argv[i])) {
      ++i;
      continue;
    }
    if (!is_output_value(argv[i])) args.push_back(argv[i]);
  }
  if (!out.empty()) {
    args.push_back("--out");
    args.push_back(out);
  }
  return args;
}

}  // namespace wafersim::app

#include "sim/app/sweep/spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>

#include "platforms/platform_spec.h"
#include "sim/app/sweep/expand.h"
#include "sim/config/diagnostics.h"
#include "sim/config/loader.h"

namespace wafersim::app::sweep {
namespace fs = std::filesystem;
using sim::config::ConfigError;
using sim::config::Diagnostic;
using sim::config::Location;
using sim::config::Node;

const char* to_string(Combine c) {
  switch (c) {
    case Combine::Grid:
      return "grid";
    case Combine::Zip:
      return "zip";
    case Combine::Random:
      return "random";
    case Combine::LatinHypercube:
      return "latin-hypercube";
  }
  return "";
}

std::string NumberFormat::format(double value, int digits) const {
  if (!dimension) {
    if (integer) return fmt::format("{}", static_cast<long long>(std::llround(value)));
    return fmt::format("{:.{}g}", value, digits);
  }
  switch (*dimension) {
    case units::Dimension::Cycles:
      return units::format(std::round(value), *dimension);
    case units::Dimension::DataSize:
      return units::format(8 * std::round(value / 8), *dimension);  // whole bytes
    default:
      break;
  }
  // Decimal prefixes with a mantissa in [1, 1000): "1.08385 GHz", "250 ns".
  static constexpr std::pair<const char*, double> kPrefixes[] = {{"E", 1e18}, {"P", 1e15}, {"T", 1e12},  {"G", 1e9},
                                                                 {"M", 1e6},  {"k", 1e3},  {"", 1},      {"m", 1e-3},
                                                                 {"u", 1e-6}, {"n", 1e-9}, {"p", 1e-12}, {"f", 1e-15}};
  const char* unit = units::base_unit(*dimension);
  const bool small_ok = units::takes_small_prefixes(*dimension);
  if (value != 0) {
    for (const auto& [sym, scale] : kPrefixes) {
      if (scale < 1 && !small_ok) break;
      if (std::fabs(value) >= scale * (1 - 1e-12)) return fmt::format("{:.{}g} {}{}", value / scale, digits, sym, unit);
    }
  }
  return fmt::format("{:.{}g} {}", value, digits, unit);
}

Value Range::at(double u) const {
  double v = 0;
  if (log) {
    v = from * std::pow(to / from, u);
  } else if (format.integer) {
    v = std::floor(from + u * (to - from + 1));
  } else {
    v = from + u * (to - from);
  }
  v = std::clamp(v, std::min(from, to), std::max(from, to));
  return Value{format.format(v, kSampledDigits), false, location};
}

bool is_sweep_document(const Node& root) {
  const Node* s = root.is_map() ? root.find("sweep") : nullptr;
  return s && s->is_map();
}

namespace {

// Collects diagnostics while walking the located tree of a sweep file.
class Reader {
 public:
  std::vector<Diagnostic> diagnostics;

  void error(const Location& at, const std::string& path, const std::string& message) {
    diagnostics.push_back(Diagnostic{at, path, message});
  }

  // Reports keys of `map` that are not in `known`, with the closest known key as a hint.
  void check_keys(const Node& map, const std::string& path, const std::vector<std::string>& known) {
    for (const auto& e : map.entries()) {
      if (std::find(known.begin(), known.end(), e.key) != known.end()) continue;
      std::string hint = sim::config::closest_match(e.key, known);
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      error(e.key_location, join(path, e.key),
            hint.empty() ? fmt::format("unknown key; expected one of: {}", list)
                         : fmt::format("unknown key; did you mean '{}'?", hint));
    }
  }

  bool expect(const Node& n, Node::Kind kind, const std::string& path, const char* what) {
    if (n.kind() == kind) return true;
    error(n.location(), path, fmt::format("expected {}, found {}", what, n.kind_name()));
    return false;
  }

  // A scalar as a Value (null and non-scalars are errors).
  std::optional<Value> value(const Node& n, const std::string& path) {
    if (n.is_null()) {
      error(n.location(), path, "expected a value, found nothing");
      return std::nullopt;
    }
    if (!n.is_scalar()) {
      error(n.location(), path, fmt::format("expected a single value, found {}", n.kind_name()));
      return std::nullopt;
    }
    return Value{n.text(), n.quoted(), n.location()};
  }

  std::optional<std::uint64_t> count(const Node& n, const std::string& path, std::uint64_t min, std::uint64_t max) {
    auto v = value(n, path);
    if (!v) return std::nullopt;
    double d = 0;
    if (v->quoted || !parse_number(v->text, d) || d != std::floor(d) || d < static_cast<double>(min) ||
        d > static_cast<double>(max)) {
      error(n.location(), path, fmt::format("expected a whole number in {} .. {}, found '{}'", min, max, v->text));
      return std::nullopt;
    }
    return static_cast<std::uint64_t>(d);
  }

  static std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "." + b; }
};

bool integer_literal(const Value& v) {
  if (v.quoted || v.text.empty()) return false;
  std::size_t i = (v.text[0] == '-' || v.text[0] == '+') ? 1 : 0;
  if (i >= v.text.size()) return false;
  for (; i < v.text.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(v.text[i]))) return false;
  return true;
}

// Reads a number or a quantity of a range end; `unit` non-empty means bare numbers only.
bool range_number(Reader& r, const Value& v, const std::string& path, const std::string& unit, double& out,
                  std::optional<units::Dimension>& dim) {
  if (!v.quoted && parse_number(v.text, out)) return true;
  if (unit.empty() && !v.quoted) {
    for (auto d : units::kDimensions) {
      auto p = units::parse(v.text, d);
      if (p.ok) {
        out = p.value;
        dim = d;
        return true;
      }
    }
  }
  r.error(v.location, path,
          unit.empty()
              ? fmt::format("expected a number or a quantity such as '1.1 GHz', found '{}'", v.text)
              : fmt::format("expected a bare number (the parameter's unit '{}' is added), found '{}'", unit, v.text));
  return false;
}

void read_range(Reader& r, const Node& n, const std::string& path, Parameter& p) {
  r.check_keys(n, path, {"from", "to", "steps", "step", "factor", "scale"});
  const Node* from_n = n.find("from");
  const Node* to_n = n.find("to");
  if (!from_n || !to_n) {
    r.error(n.location(), path, "a range needs 'from' and 'to'");
    return;
  }
  auto from_v = r.value(*from_n, path + ".from");
  auto to_v = r.value(*to_n, path + ".to");
  if (!from_v || !to_v) return;
  Range range;
  range.location = n.location();
  std::optional<units::Dimension> dim_from, dim_to;
  if (!range_number(r, *from_v, path + ".from", p.unit, range.from, dim_from) ||
      !range_number(r, *to_v, path + ".to", p.unit, range.to, dim_to))
    return;
  if (dim_from != dim_to) {
    r.error(to_n->location(), path + ".to",
            fmt::format("'from' is {} but 'to' is {}", dim_from ? units::to_string(*dim_from) : "a bare number",
                        dim_to ? units::to_string(*dim_to) : "a bare number"));
    return;
  }
  range.format.dimension = dim_from;
  range.format.integer = !dim_from && integer_literal(*from_v) && integer_literal(*to_v);

  std::string scale = "linear";
  if (const Node* s = n.find("scale")) {
    auto v = r.value(*s, path + ".scale");
    if (!v) return;
    if (v->text != "linear" && v->text != "log") {
      r.error(s->location(), path + ".scale", fmt::format("expected linear or log, found '{}'", v->text));
      return;
    }
    scale = v->text;
  }
  const Node* steps_n = n.find("steps");
  const Node* step_n = n.find("step");
  const Node* factor_n = n.find("factor");
  if ((steps_n != nullptr) + (step_n != nullptr) + (factor_n != nullptr) > 1) {
    r.error(n.location(), path, "give one of 'steps', 'step' and 'factor'");
    return;
  }
  range.log = scale == "log" || factor_n;
  if (step_n && range.log) {
    r.error(step_n->location(), path + ".step", "'step' makes a linear range; use 'factor' or 'steps' with scale: log");
    return;
  }
  if (range.log && (range.from <= 0 || range.to <= 0)) {
    r.error(n.location(), path, "a logarithmic range needs 'from' and 'to' above zero");
    return;
  }
  p.range = range;
  if (!steps_n && !step_n && !factor_n) return;  // continuous: sampled

  std::vector<double> xs;
  if (steps_n) {
    auto steps = r.count(*steps_n, path + ".steps", 1, 1000000);
    if (!steps) return;
    for (std::uint64_t i = 0; i < *steps; ++i) {
      double u = *steps == 1 ? 0.0 : static_cast<double>(i) / static_cast<double>(*steps - 1);
      xs.push_back(range.log ? range.from * std::pow(range.to / range.from, u)
                             : range.from + u * (range.to - range.from));
    }
  } else {
    const Node* by = step_n ? step_n : factor_n;
    const char* what = step_n ? "step" : "factor";
    auto v = r.value(*by, path + "." + what);
    if (!v) return;
    double s = 0;
    std::optional<units::Dimension> dim;
    if (step_n) {
      if (!range_number(r, *v, path + ".step", p.unit, s, dim)) return;
      if (dim != range.format.dimension) {
        r.error(by->location(), path + ".step", "'step' must be written like 'from' and 'to'");
        return;
      }
      range.format.integer = range.format.integer && integer_literal(*v);
      if (s == 0 || (range.to - range.from) / s < 0) {
        r.error(by->location(), path + ".step",
                fmt::format("step {} never reaches {} from {}", v->text, to_v->text, from_v->text));
        return;
      }
    } else if (v->quoted || !parse_number(v->text, s) || s <= 0 || s == 1) {
      r.error(by->location(), path + ".factor",
              fmt::format("expected a number above 0 other than 1, found '{}'", v->text));
      return;
    } else if (std::log(range.to / range.from) / std::log(s) < 0) {
      r.error(by->location(), path + ".factor",
              fmt::format("factor {} never reaches {} from {}", v->text, to_v->text, from_v->text));
      return;
    }
    double n_steps = step_n ? (range.to - range.from) / s : std::log(range.to / range.from) / std::log(s);
    if (n_steps > 1e6) {
      r.error(by->location(), path + "." + what, "more than a million values");
      return;
    }
    auto last = static_cast<std::uint64_t>(std::floor(n_steps + 1e-9));
    for (std::uint64_t i = 0; i <= last; ++i)
      xs.push_back(step_n ? range.from + static_cast<double>(i) * s : range.from * std::pow(s, static_cast<double>(i)));
  }
  for (double x : xs) {
    Value v{range.format.format(x), false, n.location()};
    // Rounding to whole numbers can repeat a value (a log range of integers): keep it once.
    if (p.values.empty() || p.values.back().text != v.text) p.values.push_back(std::move(v));
  }
  p.range.reset();
}

// Flattens `set:` (nested mappings and dotted keys alike) into key paths.
void flatten(Reader& r, const Node& n, const std::string& prefix, const std::string& path,
             std::vector<std::pair<std::string, Value>>& out, std::vector<Location>& key_locations) {
  for (const auto& e : n.entries()) {
    std::string key = prefix.empty() ? e.key : prefix + "." + e.key;
    if (e.value.is_map()) {
      flatten(r, e.value, key, path, out, key_locations);
    } else if (auto v = r.value(e.value, path + "." + key)) {
      out.emplace_back(key, *v);
      key_locations.push_back(e.key_location);
    }
  }
}

std::string platform_key_problem(const std::string& key, const std::vector<std::string>& keys) {
  if (std::find(keys.begin(), keys.end(), key) != keys.end()) return {};
  std::string hint = sim::config::closest_match(key, keys);
  return hint.empty() ? "not a platform key (see 'wafersim schema')"
                      : fmt::format("not a platform key; did you mean '{}'?", hint);
}

void read_name(Reader& r, const Node& s, const std::string& path, Spec& spec) {
  spec.name = fs::path(path).stem().string();
  if (const Node* n = s.find("name")) {
    if (auto v = r.value(*n, "sweep.name")) {
      bool ok = !v->text.empty() && std::all_of(v->text.begin(), v->text.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      });
      if (ok)
        spec.name = v->text;
      else
        r.error(n->location(), "sweep.name",
                fmt::format("expected letters, digits, '-', '_' or '.', found '{}'", v->text));
    }
  }
  if (const Node* n = s.find("description"))
    if (auto v = r.value(*n, "sweep.description")) spec.description = v->text;
}

// The base platform: a file (relative to the sweep file) or a built-in preset.
void read_platform(Reader& r, const Node& s, const fs::path& spec_dir, Spec& spec) {
  const Node* platform = s.find("platform");
  if (!platform) {
    r.error(s.location(), "sweep.platform", "missing: the base platform (a YAML file or a preset name)");
  } else if (auto v = r.value(*platform, "sweep.platform")) {
    spec.platform_location = platform->location();
    fs::path candidate = spec_dir / v->text;
    auto presets = platforms::preset_names();
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) {
      spec.platform = candidate.lexically_normal().string();
    } else if (std::find(presets.begin(), presets.end(), v->text) != presets.end()) {
      spec.platform = v->text;
    } else {
      std::string list;
      for (const auto& p : presets) list += (list.empty() ? "" : ", ") + p;
      std::string hint = sim::config::closest_match(v->text, presets);
      r.error(platform->location(), "sweep.platform",
              fmt::format("'{}' is neither a file (relative to the sweep file) nor a preset ({}){}", v->text, list,
                          hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint)));
    }
  }
}

std::vector<std::string> platform_key_names() {
  std::vector<std::string> keys;
  for (const auto& f : platforms::platform_schema()) keys.push_back(f.path);
  return keys;
}

void read_set(Reader& r, const Node& s, const std::vector<std::string>& platform_keys, Spec& spec) {
  if (const Node* n = s.find("set"); n && r.expect(*n, Node::Kind::Map, "sweep.set", "a mapping of platform keys")) {
    std::vector<Location> key_locations;
    flatten(r, *n, "", "sweep.set", spec.set, key_locations);
    for (std::size_t i = 0; i < spec.set.size(); ++i) {
      std::string problem = platform_key_problem(spec.set[i].first, platform_keys);
      if (!problem.empty()) r.error(key_locations[i], "sweep.set." + spec.set[i].first, problem);
    }
  }
}

// The workload: a wafersim command and its options; the command (nullptr when unknown).
const WorkloadCommand* read_workload(Reader& r, const Node& s, const Catalog& catalog, const fs::path& spec_dir,
                                     Spec& spec) {
  const WorkloadCommand* command = nullptr;
  spec.seed = Value{"1", false, s.location()};
  const Node* workload = s.find("workload");
  if (!workload) {
    r.error(s.location(), "sweep.workload", "missing: the command each point runs (e.g. 'command: run')");
  } else if (r.expect(*workload, Node::Kind::Map, "sweep.workload", "a mapping")) {
    const Node* cmd = workload->find("command");
    std::vector<std::string> names;
    for (const auto& c : catalog.commands) names.push_back(c.name);
    std::string list;
    for (const auto& c : names) list += (list.empty() ? "" : ", ") + c;
    if (!cmd) {
      r.error(workload->location(), "sweep.workload.command", fmt::format("missing: one of {}", list));
    } else if (auto v = r.value(*cmd, "sweep.workload.command")) {
      spec.command = v->text;
      spec.command_location = cmd->location();
      command = catalog.find(v->text);
      if (!command) {
        std::string hint = sim::config::closest_match(v->text, names);
        r.error(cmd->location(), "sweep.workload.command",
                fmt::format("'{}' is not a command a sweep can run; expected one of: {}{}", v->text, list,
                            hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
      }
    }
    if (const Node* n = workload->find("seed"))
      if (auto v = r.value(*n, "sweep.workload.seed")) spec.seed = *v;
    if (const Node* n = workload->find("wrapper")) {
      if (n->is_scalar()) {
        spec.wrapper.push_back(n->text());
      } else if (r.expect(*n, Node::Kind::Sequence, "sweep.workload.wrapper", "a program and its arguments")) {
        for (const auto& item : n->items())
          if (auto v = r.value(item, "sweep.workload.wrapper")) spec.wrapper.push_back(v->text);
      }
      // A wrapper given as a relative path names a file beside the sweep file.
      if (!spec.wrapper.empty() && spec.wrapper[0].find('/') != std::string::npos && spec.wrapper[0][0] != '/')
        spec.wrapper[0] = (spec_dir / spec.wrapper[0]).lexically_normal().string();
    }
    if (command) {
      std::vector<std::string> known{"command", "seed", "wrapper"};
      for (const auto& o : command->options) known.push_back(o.name);
      for (const auto& e : workload->entries()) {
        if (e.key == "command" || e.key == "seed" || e.key == "wrapper") continue;
        if (!command->find(e.key)) {
          std::string hint = sim::config::closest_match(e.key, known);
          std::string opts;
          for (const auto& o : command->options) opts += (opts.empty() ? "" : ", ") + o.name;
          r.error(e.key_location, "sweep.workload." + e.key,
                  hint.empty() ? fmt::format("'{}' has no option '{}'; its options: {}", spec.command, e.key, opts)
                               : fmt::format("'{}' has no option '{}'; did you mean '{}'?", spec.command, e.key, hint));
          continue;
        }
        if (auto v = r.value(e.value, "sweep.workload." + e.key)) {
          if (command->find(e.key)->flag && (v->quoted || (v->text != "true" && v->text != "false")))
            r.error(v->location, "sweep.workload." + e.key,
                    fmt::format("'{}' is a flag: expected true or false, found '{}'", e.key, v->text));
          // A file option names a file beside the sweep file when one is there (a model option
          // may also name a preset).
          std::error_code ec;
          if (command->find(e.key)->file && !v->text.empty() && v->text[0] != '/' &&
              fs::is_regular_file(spec_dir / v->text, ec))
            v->text = (spec_dir / v->text).lexically_normal().string();
          spec.options.emplace_back(e.key, *v);
        }
      }
    }
  }

  return command;
}

// One entry of sweep.parameters; nullopt when it is too broken to keep (errors recorded).
std::optional<Parameter> read_parameter(Reader& r, const Node& pn, std::size_t i, const WorkloadCommand* command,
                                        const Spec& spec, const std::vector<std::string>& platform_keys,
                                        std::set<std::string>& seen) {
  std::string ppath = fmt::format("sweep.parameters[{}]", i);
  if (!r.expect(pn, Node::Kind::Map, ppath, "a mapping with 'key' and 'values' or 'range'")) return std::nullopt;
  r.check_keys(pn, ppath, {"key", "values", "range", "unit"});
  Parameter p;
  const Node* key = pn.find("key");
  if (!key) {
    r.error(pn.location(), ppath + ".key", "missing: the platform key path or workload.OPTION to vary");
    return std::nullopt;
  }
  auto kv = r.value(*key, ppath + ".key");
  if (!kv) return std::nullopt;
  p.key = kv->text;
  p.location = key->location();
  if (!seen.insert(p.key).second) r.error(key->location(), ppath + ".key", fmt::format("'{}' is swept twice", p.key));
  if (p.key.rfind("workload.", 0) == 0) {
    p.option = p.key.substr(9);
    if (p.option == "seed") {
      p.target = Parameter::Target::Seed;
    } else {
      p.target = Parameter::Target::Option;
      const CommandOption* opt = command ? command->find(p.option) : nullptr;
      if (command && !opt) {
        std::vector<std::string> names{"seed"};
        for (const auto& o : command->options) names.push_back(o.name);
        std::string hint = sim::config::closest_match(p.option, names);
        r.error(key->location(), ppath + ".key",
                fmt::format("'{}' has no option '{}'{}", spec.command, p.option,
                            hint.empty() ? "" : fmt::format("; did you mean 'workload.{}'?", hint)));
      }
      p.flag = opt && opt->flag;
    }
  } else {
    std::string problem = platform_key_problem(p.key, platform_keys);
    if (!problem.empty()) r.error(key->location(), ppath + ".key", problem);
  }
  if (const Node* u = pn.find("unit"))
    if (auto v = r.value(*u, ppath + ".unit")) p.unit = v->text;

  const Node* values = pn.find("values");
  const Node* range = pn.find("range");
  if ((values != nullptr) == (range != nullptr)) {
    r.error(pn.location(), ppath, "give either 'values' (a list) or 'range' (from, to, steps)");
    return std::nullopt;
  }
  if (values) {
    if (!r.expect(*values, Node::Kind::Sequence, ppath + ".values", "a list of values")) return std::nullopt;
    if (values->items().empty()) r.error(values->location(), ppath + ".values", "the list is empty");
    for (const auto& item : values->items())
      if (auto v = r.value(item, ppath + ".values")) {
        if (!p.unit.empty() && !v->quoted) {
          double d = 0;
          if (!parse_number(v->text, d))
            r.error(v->location, ppath + ".values",
                    fmt::format("expected a bare number (the parameter's unit '{}' is added), found '{}'", p.unit,
                                v->text));
        }
        if (p.flag && (v->quoted || (v->text != "true" && v->text != "false")))
          r.error(v->location, ppath + ".values",
                  fmt::format("'{}' is a flag: expected true or false, found '{}'", p.option, v->text));
        p.values.push_back(*v);
      }
  } else if (r.expect(*range, Node::Kind::Map, ppath + ".range", "a mapping with from, to and steps")) {
    if (p.flag)
      r.error(range->location(), ppath + ".range", "a flag takes true or false, not a range");
    else
      read_range(r, *range, ppath + ".range", p);
  }
  return p;
}

void read_parameters(Reader& r, const Node& s, const WorkloadCommand* command,
                     const std::vector<std::string>& platform_keys, Spec& spec) {
  std::set<std::string> seen;
  if (const Node* params = s.find("parameters");
      params && r.expect(*params, Node::Kind::Sequence, "sweep.parameters", "a list of parameters")) {
    for (std::size_t i = 0; i < params->items().size(); ++i)
      if (auto p = read_parameter(r, params->items()[i], i, command, spec, platform_keys, seen))
        spec.parameters.push_back(std::move(*p));
  }
  if (!s.find("parameters"))
    r.error(s.location(), "sweep.parameters", "missing: the list of parameters to vary");
  else if (s.find("parameters")->is_sequence() && s.find("parameters")->items().empty())
    r.error(s.find("parameters")->location(), "sweep.parameters", "the list is empty: name at least one parameter");
}

// How parameters combine, and the sampling options that go with it.
void read_combine(Reader& r, const Node& s, Spec& spec) {
  if (const Node* n = s.find("combine")) {
    if (auto v = r.value(*n, "sweep.combine")) {
      if (v->text == "grid")
        spec.combine = Combine::Grid;
      else if (v->text == "zip")
        spec.combine = Combine::Zip;
      else if (v->text == "random")
        spec.combine = Combine::Random;
      else if (v->text == "latin-hypercube" || v->text == "lhs")
        spec.combine = Combine::LatinHypercube;
      else {
        std::string hint = sim::config::closest_match(v->text, {"grid", "zip", "random", "latin-hypercube"});
        r.error(n->location(), "sweep.combine",
                fmt::format("expected grid, zip, random or latin-hypercube, found '{}'{}", v->text,
                            hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint)));
      }
    }
  }
  const bool sampled = spec.combine == Combine::Random || spec.combine == Combine::LatinHypercube;
  if (const Node* n = s.find("samples")) {
    if (!sampled)
      r.error(n->location(), "sweep.samples",
              fmt::format("'samples' applies to random and latin-hypercube, not {}", to_string(spec.combine)));
    else if (auto c = r.count(*n, "sweep.samples", 1, kMaxPoints))
      spec.samples = *c;
  } else if (sampled) {
    r.error(s.location(), "sweep.samples",
            fmt::format("missing: how many points {} sampling draws", to_string(spec.combine)));
  }
  if (const Node* n = s.find("seed")) {
    if (!sampled)
      r.error(n->location(), "sweep.seed",
              fmt::format("'seed' applies to random and latin-hypercube, not {} (the workload's seed is workload.seed)",
                          to_string(spec.combine)));
    else if (auto c = r.count(*n, "sweep.seed", 0, ~std::uint64_t{0} >> 12))
      spec.sample_seed = *c;
  }
  if (!sampled)
    for (std::size_t i = 0; i < spec.parameters.size(); ++i)
      if (spec.parameters[i].range)
        r.error(spec.parameters[i].range->location, fmt::format("sweep.parameters[{}].range", i),
                fmt::format("{} needs a list of values: give 'steps', 'step' or 'factor' (continuous ranges are for "
                            "random and latin-hypercube sampling)",
                            to_string(spec.combine)));
  if (spec.combine == Combine::Zip && !spec.parameters.empty()) {
    const std::size_t n = spec.parameters[0].values.size();
    for (std::size_t i = 1; i < spec.parameters.size(); ++i)
      if (spec.parameters[i].values.size() != n)
        r.error(spec.parameters[i].location, fmt::format("sweep.parameters[{}]", i),
                fmt::format("zip needs lists of equal length: '{}' has {} values, '{}' has {}", spec.parameters[i].key,
                            spec.parameters[i].values.size(), spec.parameters[0].key, n));
  }
}

// Constraints: every name must be a parameter or a fixed value.
void read_constraints(Reader& r, const Node& s, Spec& spec) {
  std::vector<std::string> names;
  for (const auto& p : spec.parameters) names.push_back(Expression::normalise(p.key));
  for (const auto& [k, v] : spec.set) names.push_back(k);
  for (const auto& [k, v] : spec.options) names.push_back(Expression::normalise("workload." + k));
  names.emplace_back("workload.seed");
  if (const Node* n = s.find("constraints");
      n && r.expect(*n, Node::Kind::Sequence, "sweep.constraints", "a list of expressions")) {
    for (std::size_t i = 0; i < n->items().size(); ++i) {
      const Node& c = n->items()[i];
      std::string cpath = fmt::format("sweep.constraints[{}]", i);
      auto v = r.value(c, cpath);
      if (!v) continue;
      Location where = c.location();
      if (v->quoted) where.column += 1;
      try {
        Constraint con{Expression::parse(v->text, where, cpath), c.location()};
        for (std::size_t k = 0; k < con.expression.names().size(); ++k) {
          const std::string& name = con.expression.names()[k];
          if (std::find(names.begin(), names.end(), name) != names.end()) continue;
          std::string hint = sim::config::closest_match(name, names);
          r.error(con.expression.name_location(k), cpath,
                  fmt::format("'{}' is neither a swept parameter nor a fixed value{}", name,
                              hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint)));
        }
        spec.constraints.push_back(std::move(con));
      } catch (const ConfigError& e) {
        for (const auto& d : e.diagnostics()) r.diagnostics.push_back(d);
      }
    }
  }
}

void read_metrics(Reader& r, const Node& s, Spec& spec) {
  if (const Node* n = s.find("metrics");
      n && r.expect(*n, Node::Kind::Sequence, "sweep.metrics", "a list of stat paths")) {
    std::set<std::string> columns;
    for (std::size_t i = 0; i < n->items().size(); ++i) {
      const Node& m = n->items()[i];
      std::string mpath = fmt::format("sweep.metrics[{}]", i);
      Metric metric;
      metric.location = m.location();
      if (m.is_map()) {
        r.check_keys(m, mpath, {"name", "path"});
        const Node* p = m.find("path");
        if (!p) {
          r.error(m.location(), mpath + ".path", "missing: the stat path");
          continue;
        }
        auto pv = r.value(*p, mpath + ".path");
        if (!pv) continue;
        metric.path = pv->text;
        metric.name = pv->text;
        if (const Node* nm = m.find("name"))
          if (auto nv = r.value(*nm, mpath + ".name")) metric.name = nv->text;
      } else if (auto v = r.value(m, mpath)) {
        metric.path = metric.name = v->text;
      } else {
        continue;
      }
      if (metric.path.empty() || metric.path.front() == '.' || metric.path.back() == '.' ||
          metric.path.find("..") != std::string::npos) {
        r.error(m.location(), mpath,
                fmt::format(
                    "expected a dotted stat path such as 'cluster.wafer0.cycles' or 'summary.wall_seconds', found '{}'",
                    metric.path));
        continue;
      }
      if (!columns.insert(metric.name).second) {
        r.error(m.location(), mpath, fmt::format("metric '{}' is listed twice", metric.name));
        continue;
      }
      spec.metrics.push_back(std::move(metric));
    }
  }
}

void read_timeout(Reader& r, const Node& s, Spec& spec) {
  if (const Node* n = s.find("timeout")) {
    if (auto v = r.value(*n, "sweep.timeout")) {
      auto d = units::parse(v->text, units::Dimension::Duration);
      if (!d.ok || d.value <= 0)
        r.error(n->location(), "sweep.timeout", d.ok ? "expected a duration above zero" : d.error);
      else
        spec.timeout_seconds = d.value;
    }
  }
}

}  // namespace

Spec read_spec(const std::string& path, const Catalog& catalog) {
  Node root = sim::config::Loader().load(path);
  Reader r;
  Spec spec;
  spec.file = path;
  if (!is_sweep_document(root))
    throw ConfigError(Diagnostic{root.location().line > 0 ? root.location() : Location{path, 1, 1},
                                 {},
                                 "a sweep file holds one mapping 'sweep:' (see docs/sweeps.md)"});
  r.check_keys(root, "", {"sweep"});
  const Node& s = *root.find("sweep");
  r.check_keys(s, "sweep",
               {"name", "description", "platform", "set", "workload", "parameters", "combine", "samples", "seed",
                "constraints", "metrics", "timeout"});
  const fs::path spec_dir = fs::absolute(fs::path(path)).parent_path();

  read_name(r, s, path, spec);
  read_platform(r, s, spec_dir, spec);
  const std::vector<std::string> platform_keys = platform_key_names();
  read_set(r, s, platform_keys, spec);
  const WorkloadCommand* command = read_workload(r, s, catalog, spec_dir, spec);
  read_parameters(r, s, command, platform_keys, spec);
  read_combine(r, s, spec);
  read_constraints(r, s, spec);
  read_metrics(r, s, spec);
  read_timeout(r, s, spec);
  if (!r.diagnostics.empty()) throw ConfigError(std::move(r.diagnostics));
  return spec;
}

}  // namespace wafersim::app::sweep

#include "sim/app/sweep/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "platforms/platform_spec.h"
#include "sim/config/diagnostics.h"
#include "sim/config/schema.h"

namespace wafersim::app::sweep {
using sim::config::ConfigError;
using sim::config::Diagnostic;
using sim::config::Location;
using sim::config::Node;

namespace {

constexpr std::size_t kMaxDiagnostics = 20;

// The text of --set KEY=TEXT so that the child reads back exactly `v`.
std::string yaml_scalar(const std::string& text, bool quoted) {
  bool plain = !quoted && !text.empty() && text.front() != ' ' && text.back() != ' ' &&
               text.find_first_of(":#{}[],&*!|>'\"%@`\n") == std::string::npos;
  return plain ? text : nlohmann::json(text).dump();
}

void set_path(Node& root, const std::string& path, const Value& v) {
  Node* cur = &root;
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = path.find('.', start);
    std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (dot == std::string::npos) {
      Node s = Node::scalar(v.text, v.location);
      s.set_quoted(v.quoted);
      cur->set(key, v.location, std::move(s));
      return;
    }
    Node* next = cur->find(key);
    if (!next || !next->is_map()) next = &cur->set(key, v.location, Node::map(v.location));
    cur = next;
    start = dot + 1;
  }
}

std::uint64_t fnv1a(std::uint64_t h, const std::string& s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  h ^= 0xff;  // separator
  h *= 0x100000001b3ULL;
  return h;
}

// Collects distinct diagnostics across points (the same bad value shows up in many).
struct Problems {
  std::vector<Diagnostic> list;
  std::set<std::string> seen;
  std::size_t more = 0;
  void add(Diagnostic d, const PlannedPoint& p) {
    std::string key = d.location.str() + "|" + d.message;
    if (!seen.insert(key).second) return;
    if (list.size() >= kMaxDiagnostics) {
      ++more;
      return;
    }
    d.message += fmt::format(" (point {}: {})", p.index, describe(p));
    list.push_back(std::move(d));
  }
};

}  // namespace

std::string describe(const PlannedPoint& p) {
  std::string out;
  for (const auto& [k, v] : p.params) out += (out.empty() ? "" : ", ") + k + "=" + v;
  return out.empty() ? "no parameters" : out;
}

Plan Plan::make(const std::string& spec_path, const Catalog& catalog, std::optional<std::size_t> only) {
  Plan plan;
  plan.spec_ = read_spec(spec_path, catalog);
  const Spec& spec = plan.spec_;
  Expansion e = expand(spec);
  plan.candidates_ = e.candidates;
  plan.skipped_ = e.skipped;
  if (e.points.empty())
    throw ConfigError(
        Diagnostic{spec.constraints.empty() ? spec.command_location : spec.constraints[0].location, "sweep",
                   fmt::format("no points to run: all {} combinations are rejected by the constraints", e.candidates)});
  if (e.points.size() > kMaxPoints)
    throw ConfigError(Diagnostic{
        spec.command_location, "sweep",
        fmt::format("{} points, more than the limit of {}: checking and planning them would take about {:.0f} s and "
                    "{} MiB before the first point runs; split the sweep or sample it (combine: latin-hypercube)",
                    e.points.size(), kMaxPoints, static_cast<double>(e.points.size()) * 3e-4,
                    e.points.size() * 1400 >> 20)});
  if (only && *only >= e.points.size())
    throw sim::InputError(
        fmt::format("--point {}: the sweep has {} points (0 .. {})", *only, e.points.size(), e.points.size() - 1));

  const WorkloadCommand* command = catalog.find(spec.command);
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const auto& point : e.points) {
    PlannedPoint pp;
    pp.index = point.index;
    pp.args = {spec.command, spec.platform};
    for (const auto& [k, v] : spec.set)
      pp.args.insert(pp.args.end(), {"--set", k + "=" + yaml_scalar(v.text, v.quoted)});
    std::string seed = spec.seed.text;
    // Options: the fixed ones in the order written, a swept value replacing a fixed one.
    std::vector<std::pair<std::string, std::string>> options;
    for (const auto& [k, v] : spec.options) options.emplace_back(k, v.text);
    for (std::size_t i = 0; i < spec.parameters.size(); ++i) {
      const Parameter& p = spec.parameters[i];
      const Value& v = point.values[i];
      pp.params.emplace_back(p.key, v.text);
      switch (p.target) {
        case Parameter::Target::Platform:
          pp.args.insert(pp.args.end(), {"--set", p.key + "=" + yaml_scalar(p.argument(v), v.quoted)});
          break;
        case Parameter::Target::Seed:
          seed = v.text;
          break;
        case Parameter::Target::Option: {
          auto it = std::find_if(options.begin(), options.end(), [&](const auto& o) { return o.first == p.option; });
          if (it == options.end())
            options.emplace_back(p.option, p.argument(v));
          else
            it->second = p.argument(v);
          break;
        }
      }
    }
    for (const auto& [name, text] : options) {
      const CommandOption* opt = command ? command->find(name) : nullptr;
      if (opt && opt->flag) {
        if (text == "true") pp.args.push_back("--" + name);
      } else {
        pp.args.insert(pp.args.end(), {"--" + name, text});
      }
    }
    pp.args.insert(pp.args.end(), {"--seed", seed, "--json"});
    for (const auto& a : pp.args) h = fnv1a(h, a);
    h = fnv1a(h, "\n");
    plan.points_.push_back(std::move(pp));
  }
  plan.fingerprint_ = fmt::format("{:016x}", h);

  // Check the points: each platform resolves, each command line parses.
  Problems problems;
  Node base = platforms::platform_loader().load(spec.platform);
  for (const auto& point : e.points) {
    if (only && point.index != *only) continue;
    const PlannedPoint& pp = plan.points_[point.index];
    Node root = base;
    for (const auto& [k, v] : spec.set) set_path(root, k, v);
    for (std::size_t i = 0; i < spec.parameters.size(); ++i) {
      const Parameter& p = spec.parameters[i];
      if (p.target != Parameter::Target::Platform) continue;
      Value v = point.values[i];
      v.text = p.argument(v);
      set_path(root, p.key, v);
    }
    try {
      sim::config::Resolver resolver(&root);
      platforms::PlatformSpec::read(resolver.root());
      resolver.finish();
    } catch (const ConfigError& err) {
      for (const auto& d : err.diagnostics()) problems.add(d, pp);
    }
    if (catalog.check) {
      std::string message = catalog.check(pp.args);
      if (!message.empty()) {
        // Point at the option the parser complains about, if it names one.
        Location where = spec.command_location;
        for (const auto& [k, v] : spec.options)
          if (message.find("--" + k) != std::string::npos) where = v.location;
        for (std::size_t i = 0; i < spec.parameters.size(); ++i)
          if (spec.parameters[i].target == Parameter::Target::Option &&
              message.find("--" + spec.parameters[i].option) != std::string::npos)
            where = point.values[i].location;
        if (message.find("--seed") != std::string::npos) where = spec.seed.location;
        problems.add(Diagnostic{where, "sweep.workload",
                                fmt::format("'{}' rejects its command line: {}", spec.command, message)},
                     pp);
      }
    }
  }
  if (!problems.list.empty()) {
    if (problems.more) problems.list.back().message += fmt::format("; and {} more problem(s)", problems.more);
    throw ConfigError(std::move(problems.list));
  }
  return plan;
}

nlohmann::ordered_json Plan::to_json() const {
  nlohmann::ordered_json j;
  j["format"] = "wafersim-sweep/1";
  j["name"] = spec_.name;
  j["description"] = spec_.description;
  j["spec"] = std::filesystem::absolute(spec_.file).lexically_normal().string();
  j["platform"] = spec_.platform;
  j["command"] = spec_.command;
  j["combine"] = to_string(spec_.combine);
  j["candidates"] = candidates_;
  j["skipped"] = skipped_;
  j["fingerprint"] = fingerprint_;
  j["timeout_seconds"] = spec_.timeout_seconds;
  auto params = nlohmann::ordered_json::array();
  for (const auto& p : spec_.parameters) params.push_back({{"key", p.key}, {"unit", p.unit}});
  j["parameters"] = params;
  auto metrics = nlohmann::ordered_json::array();
  for (const auto& m : spec_.metrics) metrics.push_back({{"name", m.name}, {"path", m.path}});
  j["metrics"] = metrics;
  auto points = nlohmann::ordered_json::array();
  for (const auto& p : points_) {
    nlohmann::ordered_json pj;
    pj["index"] = p.index;
    nlohmann::ordered_json values = nlohmann::ordered_json::object();
    for (const auto& [k, v] : p.params) values[k] = v;
    pj["params"] = values;
    pj["args"] = p.args;
    points.push_back(pj);
  }
  j["points"] = points;
  return j;
}

}  // namespace wafersim::app::sweep

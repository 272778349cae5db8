// run_with_failures: a training whose systems fail, as parts on clusters of fewer systems.

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "models/reference/model.h"
#include "platforms/training/training_run.h"
#include "sim/child_process.h"
#include "sim/errors.h"
#include "sim/stats/formatters.h"
#include "sim/stats/recorded.h"

namespace wafersim::platforms::training {

namespace {

// Steps [first, first + steps) on `systems` systems of `batch` samples each.
struct Part {
  std::uint32_t first = 0, steps = 0, systems = 0;
  std::uint64_t batch = 0;
};

std::vector<SystemFailure> checked_failures(const platforms::PlatformSpec& spec, const TrainingConfig& config) {
  const std::uint32_t n = spec.cluster.systems;
  std::vector<SystemFailure> fs = config.failures;
  std::map<std::uint32_t, std::string> named;
  for (const auto& f : fs) {
    if (f.system >= n)
      throw sim::InputError(
          fmt::format("--fail {}: {} has {} system{} (0..{})", f.text, spec.name, n, n == 1 ? "" : "s", n - 1));
    if (f.step >= config.steps)
      throw sim::InputError(
          fmt::format("--fail {}: the run trains steps 0..{} (--steps {})", f.text, config.steps - 1, config.steps));
    if (const auto [it, fresh] = named.emplace(f.system, f.text); !fresh)
      throw sim::InputError(fmt::format("--fail {}: system {} already fails ({})", f.text, f.system, it->second));
  }
  std::stable_sort(fs.begin(), fs.end(), [](const SystemFailure& a, const SystemFailure& b) {
    return a.step != b.step ? a.step < b.step : a.system < b.system;
  });
  return fs;
}

std::vector<Part> parts_of(const std::vector<SystemFailure>& fs, const platforms::PlatformSpec& spec,
                           const models::ModelSpec& model, std::uint32_t steps) {
  const std::uint64_t global = model.batch * spec.cluster.systems;
  std::vector<Part> parts;
  Part p{0, 0, spec.cluster.systems, model.batch};
  for (std::size_t i = 0; i < fs.size(); ++i) {
    const std::uint32_t s = fs[i].step;
    if (s > p.first) {
      p.steps = s - p.first;
      parts.push_back(p);
    }
    p.first = s;
    p.systems -= 1;
    if (p.systems == 0)
      throw sim::SimulationError(fmt::format(
          "--fail {}: the last system left fails at step {}: no system remains to train on", fs[i].text, s));
    if (i + 1 < fs.size() && fs[i + 1].step == s) continue;  // the step's other failures first
    if (global % p.systems != 0)
      throw sim::InputError(
          fmt::format("--fail {}: the global batch of {} samples ({} systems x {}) does not split evenly over the {} "
                      "surviving systems",
                      fs[i].text, global, spec.cluster.systems, model.batch, p.systems));
    p.batch = global / p.systems;
  }
  p.steps = steps - p.first;
  parts.push_back(p);
  return parts;
}

platforms::StepBreakdown step_of(const nlohmann::json& j, sim::Picos offset) {
  platforms::StepBreakdown b;
  auto ps = [&j](const std::string& key) { return sim::Picos(j.at(key).get<std::uint64_t>()); };
  b.step = j.at("step").get<std::uint32_t>();
  b.start = offset + ps("start_ps");
  b.end = offset + ps("end_ps");
  for (std::size_t k = 0; k < platforms::kActivities; ++k) {
    const std::string a = platforms::to_string(static_cast<platforms::Activity>(k));
    b.busy[k] = ps(a + "_ps");
    b.exposed[k] = ps("exposed_" + a + "_ps");
  }
  b.idle = ps("idle_ps");
  return b;
}

void add_failure_stats(sim::stats::Group& g, const std::vector<SystemFailureReport>& failures) {
  for (std::size_t i = 0; i < failures.size(); ++i) {
    const auto& f = failures[i];
    auto& fg = g.group(fmt::format("failure{}", i));
    auto constant = [&fg](const std::string& name, double value, const std::string& unit, const std::string& what) {
      fg.formula(
          name, [value] { return value; }, unit, what, true);
    };
    constant("system", f.failure.system, "system", "the system that failed");
    constant("step", f.failure.step, "step", "the step at whose start it failed");
    constant("systems_after", f.systems_after, "systems", "systems training from that step on");
    constant("batch_after", static_cast<double>(f.batch_after), "samples", "samples per system from that step on");
    constant("step_time_before", static_cast<double>(f.step_before.count()), "ps",
             "the time of the step before it (0 when it failed at step 0)");
    constant("step_time_after", static_cast<double>(f.step_after.count()), "ps", "the time of its step");
  }
}

}  // namespace

TrainingReport run_with_failures(const platforms::PlatformSpec& spec, const models::ModelSpec& model,
                                 const TrainingConfig& config, sim::stats::Group& stats) {
  if (config.trace)
    throw sim::InputError("--fail system:K@STEP and tracing exclude each other (each part runs on its own cluster)");
  if (!config.wafer_failures.empty())
    throw sim::InputError(fmt::format("--fail {} and --fail {}: a link or PE and a system do not fail in one run",
                                      config.wafer_failures[0].text, config.failures[0].text));
  if (config.first_step != 0 || config.start) throw std::logic_error("run_with_failures: a resumed run");
  if (config.functional && config.cluster == ClusterMode::Replay && config.arithmetic == WaferArithmetic::Programs)
    throw sim::InputError(
        "--fail system:K@STEP: the replay's '--wafer-arithmetic programs' cannot resume from MemoryX's state "
        "(use --cluster-model cosim)");
  const std::vector<SystemFailure> fs = checked_failures(spec, config);
  const std::vector<Part> parts = parts_of(fs, spec, model, config.steps);

  std::vector<platforms::StepBreakdown> steps;
  std::vector<double> losses;
  std::vector<std::vector<std::uint64_t>> cycles, waits;
  std::uint64_t checked = 0, windows = 0;
  sim::Picos offset{0};
  std::shared_ptr<const TrainingState> state;
  auto part_inputs = [&](const Part& p) {
    platforms::PlatformSpec s = spec;
    s.cluster.systems = p.systems;
    models::ModelSpec m = model;
    m.batch = p.batch;
    TrainingConfig c = config;
    c.failures.clear();
    c.steps = p.steps;
    c.first_step = p.first;
    c.start = state;
    c.segment = true;
    return std::make_tuple(s, m, c);
  };
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    const auto [s, m, c] = part_inputs(parts[i]);
    const nlohmann::json j = sim::run_in_child(
        [&, &s = s, &m = m, &c = c] {
          sim::stats::Group root("");
          const TrainingReport r = run_training(s, m, c, root);
          nlohmann::json out;
          out["report"] = to_json(r);
          if (r.state) out["state"] = to_json(*r.state);
          out["stats"] = sim::stats::to_json(root);
          out["descriptions"] = sim::stats::describe_json(root);
          return out;
        },
        fmt::format("steps {}..{} on {} systems", parts[i].first, parts[i].first + parts[i].steps - 1,
                    parts[i].systems));
    const auto& rep = j.at("report");
    for (const auto& st : rep.at("steps")) steps.push_back(step_of(st, offset));
    offset = steps.back().end;
    if (rep.contains("losses"))
      for (const auto& l : rep.at("losses")) losses.push_back(l.get<double>());
    if (rep.contains("program_cycles")) {
      for (const auto& row : rep.at("program_cycles")) cycles.push_back(row.get<std::vector<std::uint64_t>>());
      for (const auto& row : rep.at("program_waits")) waits.push_back(row.get<std::vector<std::uint64_t>>());
      windows += rep.at("windows").get<std::uint64_t>();
    }
    checked += rep.value("result_elements_checked", std::uint64_t{0});
    if (j.contains("state")) state = std::make_shared<const TrainingState>(state_from_json(j.at("state")));
    sim::stats::add_recorded(stats.group(fmt::format("segment{}", i)), j.at("stats"), j.at("descriptions"), "");
  }

  const auto [s, m, c] = part_inputs(parts.back());
  TrainingReport r = run_training(s, m, c, stats);
  for (auto st : r.timeline.steps) {
    st.start = st.start + offset;
    st.end = st.end + offset;
    steps.push_back(st);
  }
  for (auto& iv : r.timeline.intervals) {
    iv.start = iv.start + offset;
    iv.end = iv.end + offset;
  }
  r.timeline.steps = std::move(steps);
  losses.insert(losses.end(), r.losses.begin(), r.losses.end());
  r.losses = std::move(losses);
  cycles.insert(cycles.end(), r.program_cycles.begin(), r.program_cycles.end());
  waits.insert(waits.end(), r.program_waits.begin(), r.program_waits.end());
  r.program_cycles = std::move(cycles);
  r.program_waits = std::move(waits);
  r.checked += checked;
  r.windows += windows;
  r.wafers = spec.cluster.systems;
  r.batch_per_wafer = model.batch;
  if (config.functional) r.initial = models::reference::Model(model).initial_parameters(config.seed);

  const std::uint64_t global = model.batch * spec.cluster.systems;
  for (const auto& f : fs) {
    // The systems before and after all the failures of its step.
    const auto before = std::find_if(parts.begin(), parts.end(), [&f](const Part& p) { return p.first == f.step; });
    SystemFailureReport fr;
    fr.failure = f;
    fr.systems_before = before == parts.begin() ? spec.cluster.systems : std::prev(before)->systems;
    fr.systems_after = before->systems;
    fr.batch_before = global / fr.systems_before;
    fr.batch_after = before->batch;
    if (f.step > 0) fr.step_before = r.timeline.steps[f.step - 1].duration();
    fr.step_after = r.timeline.steps[f.step].duration();
    r.failures.push_back(fr);
  }
  auto& training = stats.group("training");
  add_training_stats(training, r, config.steps);
  add_failure_stats(training.group("failures"), r.failures);
  return r;
}

}  // namespace wafersim::platforms::training

#include "sim/app/model_report.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <ostream>

#include "sim/errors.h"
#include "sim/units/quantity.h"

namespace wafersim::app {
using models::compiler::CompiledModel;
using models::compiler::LayerProgram;
using platforms::runtime::StepResult;

void ModelArgs::add(CLI::App& cmd, Use use) {
  cmd.add_option("--model-set", set, "override a model key, e.g. --model-set batch=4 (repeatable)")
      ->type_name("KEY=VALUE");
  if (use == Use::Infer) placement = "resident";
  if (use != Use::Train)
    cmd.add_option("--placement", placement,
                   "streaming: one layer at a time on the whole wafer, weights streamed in from the edge; resident: "
                   "weights in SRAM, each layer on a region of its own; mesh: weights in SRAM, every layer of a "
                   "Llama-style decoder spread over one region (MeshGEMV, inference)")
        ->check(CLI::IsMember({"streaming", "resident", "mesh"}))
        ->capture_default_str();
  cmd.add_option("--accumulate", accumulate,
                 "partial sums in fp32 (fmac.f32.f16; the SRAM ports feed it at half the 16-bit rate) or native "
                 "(in the model's number format, full rate)")
      ->check(CLI::IsMember({"fp32", "native"}))
      ->capture_default_str();
  cmd.add_option("--layout", layout,
                 "weight streaming's activation layout: auto (the rule of docs/compiler.md: row groups when the "
                 "hidden dimension fits a fraction of the rows and that lowers the tokens per PE), columns (tokens "
                 "along all columns, the hidden dimension over all rows) or groups (row groups, each with the whole "
                 "hidden dimension for its share of the tokens; an error when none fits)")
      ->check(CLI::IsMember({"auto", "columns", "groups"}))
      ->capture_default_str();
  if (use == Use::Infer) inference = true;
  if (use == Use::Compile || use == Use::Run)
    cmd.add_flag("--inference", inference, "forward only (no backward, no weight gradients)");
  if (use == Use::Compile || use == Use::Run)
    cmd.add_option("--recompute", recompute,
                   "training with weight streaming: none (every activation the backward reads stays in SRAM), blocks "
                   "(only each transformer block's input stays; the block's forward runs again before its backward) "
                   "or auto (blocks when the activations do not fit otherwise)")
        ->check(CLI::IsMember({"auto", "none", "blocks"}))
        ->capture_default_str();
}

models::compiler::CompileOptions ModelArgs::options(bool emit) const {
  models::compiler::CompileOptions o;
  o.placement =
      placement == "resident" ? models::compiler::PlacementKind::Resident : models::compiler::PlacementKind::Streaming;
  o.accumulate = accumulate == "native" ? models::compiler::Accumulate::Native : models::compiler::Accumulate::Fp32;
  o.training = !inference;
  o.emit = emit;
  o.layout = layout == "columns"  ? models::compiler::LayoutChoice::Columns
             : layout == "groups" ? models::compiler::LayoutChoice::Groups
                                  : models::compiler::LayoutChoice::Auto;
  o.recompute = recompute == "none"     ? models::compiler::Recompute::None
                : recompute == "blocks" ? models::compiler::Recompute::Blocks
                                        : models::compiler::Recompute::Auto;
  return o;
}

models::LoadedModel ModelArgs::load() const {
  if (placement != "streaming" && layout != "auto")
    throw sim::InputError(
        "--layout applies to the weight-streaming placement; the weight-resident placement places each layer in a "
        "region of its own");
  return models::load_model(model, set);
}

namespace {

std::string region(const LayerProgram& p) {
  return p.rows ? fmt::format("{} x {}", p.rows, p.columns) : std::string("-");
}

}  // namespace

std::string bytes_cell(double b) { return units::pretty(b, "B"); }
std::string count_cell(double n) {
  return n < 1e5 ? fmt::format("{}", static_cast<std::uint64_t>(n)) : units::pretty(n, "");
}

nlohmann::ordered_json mapping_json(const CompiledModel& cm, const std::string& platform) {
  nlohmann::ordered_json j;
  const auto& m = cm.model;
  j["model"] = m.name;
  j["platform"] = platform;
  j["parameters"] = m.parameters();
  j["dtype"] = models::to_string(m.dtype);
  j["batch"] = m.batch;
  j["sequence"] = m.sequence;
  j["placement"] = models::compiler::to_string(cm.options.placement);
  j["accumulate"] = models::compiler::to_string(cm.options.accumulate);
  j["training"] = cm.options.training;
  const auto& l = cm.layout;
  j["layout"] = {{"rule", cm.layout_reason},
                 {"kind", l.groups > 1 ? "groups" : "columns"},
                 {"choice", models::compiler::to_string(cm.options.layout)},
                 {"why", cm.layout_why},
                 {"groups", l.groups},
                 {"columns", l.columns},
                 {"rows", l.slices()},
                 {"tokens_per_pe", l.tokens_per_pe},
                 {"bands", l.bands.size()},
                 {"rows_per_band", l.rows_per_band_used}};
  j["colors"] = {
      {"used", cm.colors.used()}, {"available", cm.target.fabric.colors}, {"weight", cm.colors.weight.size()}};
  j["sram"] = {{"peak_bytes", cm.sram_peak}, {"capacity_bytes", cm.target.sram_bytes()}};
  if (cm.options.training)
    j["recompute"] = {{"choice", models::compiler::to_string(cm.options.recompute)},
                      {"recomputed", cm.recomputed},
                      {"why", cm.recompute_why}};
  auto& steps = j["steps"] = nlohmann::ordered_json::array();
  std::uint64_t total_bound = 0, total_flops = 0, in = 0, out = 0;
  for (const auto& p : cm.programs) {
    steps.push_back({{"layer", p.layer},
                     {"kind", models::to_string(p.kind)},
                     {"phase", models::compiler::to_string(p.phase)},
                     {"recompute", p.recompute},
                     {"code", p.analytical ? "analytical" : "pe"},
                     {"region", {{"rows", p.rows}, {"columns", p.columns}}},
                     {"sram_max_bytes", p.sram.max_bytes},
                     {"sram_mean_bytes", p.sram.mean_bytes},
                     {"colors", p.colors},
                     {"wavelets_in", p.work.wavelets_in},
                     {"wavelets_out", p.work.wavelets_out},
                     {"flops", p.work.flops},
                     {"bound",
                      {{"cycles", p.bound.cycles},
                       {"binds", models::compiler::to_string(p.bound.binds)},
                       {"compute", p.bound.compute},
                       {"sram", p.bound.sram},
                       {"fabric", p.bound.fabric},
                       {"edge", p.bound.edge}}}});
    total_bound += p.bound.cycles;
    if (!p.recompute) total_flops += p.work.flops;
    in += p.work.wavelets_in;
    out += p.work.wavelets_out;
  }
  j["totals"] = {{"bound_cycles", total_bound},
                 {"bound_seconds", static_cast<double>(total_bound) / cm.target.wafer.clock.hz},
                 {"flops", total_flops},
                 {"wavelets_in", in},
                 {"wavelets_out", out}};
  return j;
}

void print_mapping(std::ostream& o, const CompiledModel& cm, const std::string& platform) {
  const auto& m = cm.model;
  const auto& t = cm.target;
  o << fmt::format("wafersim compile: {} ({} parameters, {}, batch {} x sequence {}) on {} ({} x {} PEs at {})\n",
                   m.name, units::pretty(static_cast<double>(m.parameters()), ""), models::to_string(m.dtype), m.batch,
                   m.sequence, platform, t.width(), t.height(), units::format(t.wafer.clock));
  o << fmt::format("  placement   weight streaming: one layer at a time on the whole wafer; {}\n",
                   cm.options.training ? "forward, then backward (data and weight gradients)" : "forward only");
  o << fmt::format("  layout      {}\n", cm.layout_reason);
  o << fmt::format("  colors      {} of {} ({} weight, 4 column chains, {} row chains, 2 column broadcasts, 1 out)\n",
                   cm.colors.used(), t.fabric.colors, cm.colors.weight.size(), cm.colors.with_west ? 4 : 2);
  o << fmt::format("  SRAM        {} of {} per PE at the peak (activations stay resident)\n", bytes_cell(cm.sram_peak),
                   bytes_cell(t.sram_bytes()));
  if (cm.options.training)
    o << fmt::format("  recompute   {}: {}\n", cm.recomputed ? "blocks" : "none", cm.recompute_why);
  if (m.sparsity.any())
    o << fmt::format(
        "  sparsity    {} sparse layer(s): applies to replayed training runs (wafersim train --cluster-model replay); "
        "this mapping is dense\n",
        m.sparsity.layers.size());
  o << fmt::format("  accumulate  {}\n\n", models::compiler::to_string(cm.options.accumulate));
  o << fmt::format("  {:<4} {:<12} {:<13} {:<16} {:<10} {:>11} {:>10} {:>10} {:>6} {:>10} {:>10} {:>10} {:>12}  {}\n",
                   "#", "layer", "kind", "phase", "code", "region", "SRAM max", "mean", "colors", "in", "out", "FLOPs",
                   "bound", "binds");
  std::uint64_t total = 0, flops = 0;
  for (std::size_t i = 0; i < cm.programs.size(); ++i) {
    const auto& p = cm.programs[i];
    o << fmt::format(
        "  {:<4} {:<12} {:<13} {:<16} {:<10} {:>11} {:>10} {:>10} {:>6} {:>10} {:>10} {:>10} {:>12}  {}\n", i, p.layer,
        models::to_string(p.kind), p.recompute ? "recompute" : models::compiler::to_string(p.phase),
        p.analytical ? "analytical" : "pe", region(p), bytes_cell(static_cast<double>(p.sram.max_bytes)),
        bytes_cell(p.sram.mean_bytes), p.colors, count_cell(static_cast<double>(p.work.wavelets_in)),
        count_cell(static_cast<double>(p.work.wavelets_out)), count_cell(static_cast<double>(p.work.flops)),
        p.bound.cycles, models::compiler::to_string(p.bound.binds));
    total += p.bound.cycles;
    if (!p.recompute) flops += p.work.flops;  // the model's FLOPs: a recomputed forward adds none
  }
  const double secs = static_cast<double>(total) / t.wafer.clock.hz;
  const double peak = static_cast<double>(t.wafer.pe_count()) * t.peak_flops_per_cycle(cm.dtype()) * t.wafer.clock.hz;
  o << fmt::format("\n  total       {} cycles at least ({}), {} FLOP: at most {} ({:.1f}% of the {} dense peak)\n",
                   total, units::pretty(secs, "s"), units::pretty(static_cast<double>(flops), ""),
                   units::pretty(secs > 0 ? static_cast<double>(flops) / secs : 0, "FLOP/s"),
                   secs > 0 ? 100.0 * static_cast<double>(flops) / secs / peak : 0.0, units::pretty(peak, "FLOP/s"));
}

nlohmann::ordered_json run_json(const CompiledModel& cm, const std::deque<StepResult>& results) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  const double hz = cm.target.wafer.clock.hz;
  const double peak = static_cast<double>(cm.target.wafer.pe_count()) * cm.target.peak_flops_per_cycle(cm.dtype());
  std::size_t index = 0;
  for (const auto& r : results) {
    const bool recompute = index < cm.programs.size() && cm.programs[index].recompute;
    ++index;
    nlohmann::ordered_json stalls;
    for (int k = 0; k < hw::kStallCauses; ++k)
      stalls[std::string(hw::stall_name(static_cast<hw::Stall>(k)))] = r.stalls[k];
    nlohmann::ordered_json checks = nlohmann::ordered_json::array();
    for (const auto& c : r.checks) {
      checks.push_back({{"what", c.what},
                        {"reference", c.reference},
                        {"exact", c.exact},
                        {"compared", c.compared},
                        {"mismatches", c.mismatches},
                        {"max_abs_error", c.max_abs_error},
                        {"tolerance", c.tolerance},
                        {"passed", c.passed()}});
      if (c.value) checks.back()["value"] = *c.value;
    }
    const double cyc = static_cast<double>(r.cycles());
    arr.push_back({{"layer", r.layer},
                   {"kind", models::to_string(r.kind)},
                   {"phase", models::compiler::to_string(r.phase)},
                   {"recompute", recompute},
                   {"simulated", r.simulated},
                   {"start_cycle", r.start},
                   {"cycles", r.cycles()},
                   {"bound_cycles", r.bound.cycles},
                   {"binds", models::compiler::to_string(r.bound.binds)},
                   {"flops", r.flops},
                   {"flops_per_second", cyc > 0 ? static_cast<double>(r.flops) * hz / cyc : 0.0},
                   {"peak_fraction", cyc > 0 ? static_cast<double>(r.flops) / (cyc * peak) : 0.0},
                   {"wavelets_in", r.wavelets_in},
                   {"wavelets_out", r.wavelets_out},
                   {"stalls", stalls},
                   {"checks", checks}});
  }
  return arr;
}

void print_run(std::ostream& o, const CompiledModel& cm, const std::deque<StepResult>& results) {
  const double hz = cm.target.wafer.clock.hz;
  const double peak = static_cast<double>(cm.target.wafer.pe_count()) * cm.target.peak_flops_per_cycle(cm.dtype());
  o << fmt::format("  {:<4} {:<12} {:<16} {:>10} {:>10} {:<7} {:>12} {:>7}  {:<28} {}\n", "#", "layer", "phase",
                   "cycles", "bound", "binds", "FLOP/s", "% peak", "stalls (largest)", "check");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const char* phase =
        i < cm.programs.size() && cm.programs[i].recompute ? "recompute" : models::compiler::to_string(r.phase);
    const double cyc = static_cast<double>(r.cycles());
    std::vector<std::pair<std::uint64_t, int>> st;
    for (int k = 0; k < hw::kStallCauses; ++k)
      if (r.stalls[k]) st.emplace_back(r.stalls[k], k);
    std::sort(st.rbegin(), st.rend());
    std::string stalls;
    for (std::size_t k = 0; k < st.size() && k < 2; ++k)
      stalls += fmt::format("{}{} {}", k ? ", " : "", hw::stall_name(static_cast<hw::Stall>(st[k].second)),
                            count_cell(static_cast<double>(st[k].first)));
    if (stalls.empty()) stalls = "none";
    std::string check = "-";
    if (!r.simulated) {
      o << fmt::format("  {:<4} {:<12} {:<16} {:>10} {:>10} {:<7} {:>12} {:>7}  {:<28} {}\n", i, r.layer, phase, "-",
                       r.bound.cycles, models::compiler::to_string(r.bound.binds), "-", "-",
                       "not simulated: no PE code", "-");
      continue;
    }
    if (!r.checks.empty()) {
      std::uint64_t bad = 0, n = 0;
      bool exact = true;
      for (const auto& c : r.checks) {
        bad += c.mismatches;
        n += c.compared;
        exact = exact && c.exact;
      }
      check = bad ? fmt::format("FAILED ({} of {})", bad, n)
                  : fmt::format("{} ({})", exact ? "bit-exact" : "within tolerance", n);
    }
    o << fmt::format("  {:<4} {:<12} {:<16} {:>10} {:>10} {:<7} {:>12} {:>6.2f}%  {:<28} {}\n", i, r.layer, phase,
                     r.cycles(), r.bound.cycles, models::compiler::to_string(r.bound.binds),
                     units::pretty(cyc > 0 ? static_cast<double>(r.flops) * hz / cyc : 0, "FLOP/s"),
                     cyc > 0 ? 100.0 * static_cast<double>(r.flops) / (cyc * peak) : 0.0, stalls, check);
  }
}

}  // namespace wafersim::app

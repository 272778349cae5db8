#include "sim/app/resident_report.h"

#include <fmt/format.h>

#include "sim/app/model_report.h"
#include "sim/units/quantity.h"

namespace wafersim::app {
using models::resident::ResidentLayer;
using models::resident::ResidentPlan;

namespace {

std::string rate(double n) {
  std::string s = units::pretty(n, "");
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}
double per_s(double clock, std::uint64_t cycles) { return cycles ? clock / static_cast<double>(cycles) : 0; }

nlohmann::ordered_json cost_json(const models::resident::LayerCost& c) {
  return {{"bound_cycles", c.bound.cycles}, {"binds", models::compiler::to_string(c.bound.binds)},
          {"compute", c.bound.compute},     {"sram", c.bound.sram},
          {"fabric", c.bound.fabric},       {"edge", c.bound.edge},
          {"flops", c.work.flops}};
}

}  // namespace

nlohmann::ordered_json resident_json(const ResidentPlan& p, const models::ModelSpec& m, const std::string& platform,
                                     double clock) {
  nlohmann::ordered_json j;
  j["model"] = m.name;
  j["platform"] = platform;
  j["placement"] = "resident";
  j["parameters"] = m.parameters();
  j["dtype"] = models::to_string(m.dtype);
  j["batch"] = m.batch;
  j["sequence"] = m.sequence;
  j["prompt"] = p.prompt;
  j["wafers"] = p.wafers;
  j["wafers_available"] = p.wafers_available;
  j["shelves"] = p.shelves;
  j["shelf_rows"] = p.shelf_rows;
  j["resident_bytes"] = p.state_bytes;
  j["sram"] = {{"capacity_bytes", p.sram_capacity}, {"max_bytes", p.sram_max}, {"mean_bytes", p.sram_mean}};
  j["colors"] = {{"max_per_region", p.colors_max}, {"available", p.colors_available}};
  j["skipped"] = p.skipped;
  auto& layers = j["layers"] = nlohmann::ordered_json::array();
  for (const auto& l : p.layers) {
    const auto& r = l.region;
    layers.push_back(
        {{"layer", l.name},
         {"kind", models::to_string(l.kind)},
         {"region", {{"wafer", r.wafer}, {"x", r.x0}, {"y", r.y0}, {"rows", r.rows()}, {"columns", r.columns()}}},
         {"cut", models::resident::to_string(l.decode.cut)},
         {"sram",
          {{"weights_bytes", l.decode.weight_bytes},
           {"kv_cache_bytes", l.decode.kv_bytes},
           {"buffers_bytes", l.decode.act_bytes},
           {"max_bytes", l.decode.sram_bytes()},
           {"mean_bytes", l.decode.mean_bytes}}},
         {"colors", l.decode.colors},
         {"in_wavelets_per_token", l.in_wavelets},
         {"decode", cost_json(l.decode)},
         {"prefill", cost_json(l.prefill)}});
  }
  auto& tr = j["transfers"] = nlohmann::ordered_json::array();
  for (const auto& t : p.transfers)
    tr.push_back({{"from", t.from},
                  {"to", t.to},
                  {"wavelets_per_token", t.wavelets},
                  {"hops", t.hops},
                  {"across_wafers", t.across_wafers}});
  auto& links = j["wafer_links"] = nlohmann::ordered_json::array();
  for (const auto& w : p.links)
    links.push_back(
        {{"from", w.from}, {"to", w.from + 1}, {"bytes_per_token", w.bytes}, {"cycles_per_token", w.cycles}});
  j["pipeline"] = {{"stage_cycles", p.stage_cycles},
                   {"stage", p.stage},
                   {"binds", p.stage_binds},
                   {"tokens_per_s", per_s(clock, p.stage_cycles)},
                   {"latency_cycles", p.latency_cycles},
                   {"decode_step_cycles", p.decode_step_cycles(m.batch)},
                   {"decode_tokens_per_s", per_s(clock, p.decode_step_cycles(m.batch)) * static_cast<double>(m.batch)},
                   {"decode_binds", m.batch * p.stage_cycles >= p.latency_cycles ? "stage" : "latency"},
                   {"prefill_stage_cycles", p.prefill_stage_cycles},
                   {"prefill_stage", p.prefill_stage},
                   {"prefill_cycles", p.prefill_cycles(m.batch)}};
  return j;
}

void print_resident(std::ostream& out, const ResidentPlan& p, const models::ModelSpec& m, const std::string& platform,
                    double clock) {
  const std::uint64_t esz = models::bytes_of(m.dtype);
  out << fmt::format("wafersim compile: {} on {}, weight-resident inference (prefill, then decode with a KV cache)\n",
                     m.name, platform);
  out << fmt::format("  wafers      {} of {}; regions in {} band{} of {} rows per wafer, serpentine\n", p.wafers,
                     p.wafers_available, p.shelves, p.shelves == 1 ? "" : "s", p.shelf_rows);
  out << fmt::format(
      "  resident    {} ({} parameters x {} B, KV cache for batch {} x sequence {}); SRAM {} of {} per PE "
      "(max), mean {}\n",
      bytes_cell(static_cast<double>(p.state_bytes)), count_cell(static_cast<double>(m.parameters())), esz, m.batch,
      m.sequence, bytes_cell(static_cast<double>(p.sram_max)), bytes_cell(static_cast<double>(p.sram_capacity)),
      bytes_cell(p.sram_mean));
  out << fmt::format("  colors      at most {} per region of {}\n", p.colors_max, p.colors_available);
  if (!p.skipped.empty()) {
    std::string s;
    for (const auto& n : p.skipped) s += (s.empty() ? "" : ", ") + n;
    out << fmt::format("  skipped     {} (training only)\n", s);
  }
  out << fmt::format("  {:<16} {:<10} {:>3} {:>11} {:>11} {:<8} {:>9} {:>9} {:>9} {:>8} {:>10} {:>10} {}\n", "layer",
                     "kind", "waf", "at (x,y)", "rows x cols", "cut", "weights", "kv", "buffers", "in/tok", "FLOP/tok",
                     "cyc/tok", "binds");
  for (const ResidentLayer& l : p.layers) {
    const auto& r = l.region;
    out << fmt::format(
        "  {:<16} {:<10} {:>3} {:>11} {:>11} {:<8} {:>9} {:>9} {:>9} {:>8} {:>10} {:>10} {}\n", l.name,
        models::to_string(l.kind), r.wafer, fmt::format("({},{})", r.x0, r.y0),
        fmt::format("{} x {}", r.rows(), r.columns()), models::resident::to_string(l.decode.cut),
        bytes_cell(static_cast<double>(l.decode.weight_bytes)), bytes_cell(static_cast<double>(l.decode.kv_bytes)),
        bytes_cell(static_cast<double>(l.decode.act_bytes)), count_cell(static_cast<double>(l.in_wavelets)),
        count_cell(static_cast<double>(l.decode.work.flops)), count_cell(static_cast<double>(l.decode.bound.cycles)),
        models::compiler::to_string(l.decode.bound.binds));
  }
  std::uint64_t between = 0, hops = 0;
  for (const auto& t : p.transfers)
    if (t.from != "host") {
      between += t.wavelets;
      hops += t.wavelets * t.hops;
    }
  out << fmt::format("  traffic     {} wavelets per token between regions ({} wavelet-hops on wafer)\n",
                     count_cell(static_cast<double>(between)), count_cell(static_cast<double>(hops)));
  for (const auto& w : p.links)
    out << fmt::format("  wafer link  {} -> {}: {} per token, {} cycles per token\n", w.from, w.from + 1,
                       bytes_cell(static_cast<double>(w.bytes)), w.cycles);
  out << fmt::format("  pipeline    slowest stage '{}' {} cycles per token ({}): at most {} tokens/s at {} when full\n",
                     p.stage, p.stage_cycles, p.stage_binds, rate(per_s(clock, p.stage_cycles)),
                     units::pretty(clock, "Hz"));
  const std::uint64_t step = p.decode_step_cycles(m.batch);
  out << fmt::format(
      "  decode      batch {}: one token passes {} stages in >= {} cycles; a step (one token per sequence) >= {} "
      "cycles: "
      "at most {} tokens/s ({} binds)\n",
      m.batch, p.layers.size() + p.links.size(), p.latency_cycles, step,
      rate(per_s(clock, step) * static_cast<double>(m.batch)),
      m.batch * p.stage_cycles >= p.latency_cycles ? "the slowest stage" : "the pipeline's latency");
  out << fmt::format("  prefill     {} x {} prompt tokens >= {} cycles ({}; slowest stage '{}', {} cycles per token)\n",
                     m.batch, p.prompt, p.prefill_cycles(m.batch),
                     units::pretty(static_cast<double>(p.prefill_cycles(m.batch)) / clock, "s"), p.prefill_stage,
                     p.prefill_stage_cycles);
}

namespace {

struct Phases {
  std::uint64_t placement = 0;  // cycles of the weight placement step
  std::uint64_t prefill = 0;    // cycles from the first layer to the last before the loss
  std::uint64_t tokens = 0;
};

Phases phases(const models::compiler::CompiledModel& cm, const std::deque<platforms::runtime::StepResult>& results) {
  Phases ph;
  ph.tokens = cm.model.batch * cm.model.sequence;
  if (results.empty()) return ph;
  ph.placement = results.front().cycles();
  std::uint64_t start = 0, end = 0;
  bool any = false;
  for (std::size_t i = 1; i < results.size(); ++i) {
    if (results[i].kind == models::LayerKind::CrossEntropy) continue;
    if (!any) start = results[i].start;
    any = true;
    end = results[i].end;
  }
  ph.prefill = end - start;
  return ph;
}

}  // namespace

nlohmann::ordered_json resident_run_json(const models::compiler::CompiledModel& cm,
                                         const std::deque<platforms::runtime::StepResult>& results,
                                         const ResidentPlan* plan, double clock) {
  const Phases ph = phases(cm, results);
  nlohmann::ordered_json j;
  j["weight_placement_cycles"] = ph.placement;
  j["prefill_tokens"] = ph.tokens;
  j["prefill_cycles"] = ph.prefill;
  j["prefill_tokens_per_s"] = ph.prefill ? static_cast<double>(ph.tokens) * per_s(clock, ph.prefill) : 0.0;
  if (plan) {
    const std::uint64_t step = plan->decode_step_cycles(cm.model.batch);
    j["decode_bound"] = {{"simulated", false},
                         {"step_cycles", step},
                         {"cycles_per_token", step / std::max<std::uint64_t>(cm.model.batch, 1)},
                         {"tokens_per_s", per_s(clock, step) * static_cast<double>(cm.model.batch)},
                         {"pipeline_prefill_cycles", plan->prefill_cycles(cm.model.batch)}};
  }
  return j;
}

void print_resident_run(std::ostream& out, const models::compiler::CompiledModel& cm,
                        const std::deque<platforms::runtime::StepResult>& results, const ResidentPlan* plan,
                        double clock) {
  const Phases ph = phases(cm, results);
  out << fmt::format("  weights       placed in SRAM once before the first layer ({} cycles, untimed image load)\n",
                     ph.placement);
  out << fmt::format("  prefill       {} tokens ({} x {}) in {} cycles: {} cycles per token, {} tokens/s at {}\n",
                     ph.tokens, cm.model.batch, cm.model.sequence, ph.prefill, ph.tokens ? ph.prefill / ph.tokens : 0,
                     rate(static_cast<double>(ph.tokens) * per_s(clock, ph.prefill)), units::pretty(clock, "Hz"));
  if (plan) {
    const std::uint64_t step = plan->decode_step_cycles(cm.model.batch);
    out << fmt::format(
        "  decode        bound of the pipelined plan (not simulated): >= {} cycles per step of {} tokens, at most {} "
        "tokens/s; the same plan's prefill >= {} cycles\n",
        step, cm.model.batch, rate(per_s(clock, step) * static_cast<double>(cm.model.batch)),
        plan->prefill_cycles(cm.model.batch));
  } else {
    out << "  decode        no pipelined plan: the model does not fit the regions of this platform\n";
  }
}

void add_inference_stats(sim::stats::Group& wafer, const models::compiler::CompiledModel& cm,
                         const models::resident::ResidentDecode* decode) {
  const double tokens = static_cast<double>(decode ? decode->rp.cm.layout.tokens * decode->positions
                                                   : cm.model.batch * cm.model.sequence);
  wafer.group("inference")
      .formula(
          "tokens", [tokens] { return tokens; }, "tokens", "token positions the run processes (every sample)", true);
}

namespace {

struct DecodePhases {
  std::uint64_t prefill = 0, fill = 0, decode = 0;  // cycles
  std::uint64_t prompt = 0, tokens = 0, batch = 0, placement = 0;
  bool parallel = false;
};

DecodePhases decode_phases(const models::resident::ResidentDecode& rd,
                           const std::deque<platforms::runtime::StepResult>& results) {
  DecodePhases ph;
  ph.prompt = rd.prompt;
  ph.tokens = rd.positions - rd.prompt;
  ph.batch = rd.rp.cm.layout.tokens;
  ph.parallel = rd.prefill.has_value();
  const std::size_t before = rd.prefill ? rd.prefill->cm.programs.size() : 0;  // the prefill's results
  if (results.size() != before + rd.rp.cm.programs.size()) return ph;
  ph.placement = results.front().cycles();
  if (rd.prefill) {
    if (before > 1) ph.prefill = results[before - 1].end - results[1].start;
    if (!rd.fills.empty()) ph.fill = results[before + rd.fills.back().program].end - results[before].start;
    if (!rd.position_start.empty()) ph.decode = results.back().end - results[before + rd.position_start.front()].start;
    return ph;
  }
  if (rd.position_start.empty()) return ph;
  const std::uint64_t start = results[rd.position_start.front()].start;
  const std::uint64_t mid = rd.prompt < rd.positions ? results[rd.position_start[rd.prompt]].start : results.back().end;
  ph.prefill = mid - start;
  ph.decode = results.back().end - mid;
  return ph;
}

}  // namespace

nlohmann::ordered_json decode_run_json(const models::resident::ResidentDecode& rd,
                                       const std::deque<platforms::runtime::StepResult>& results, double clock) {
  const DecodePhases ph = decode_phases(rd, results);
  nlohmann::ordered_json j;
  j["weight_placement_cycles"] = ph.placement;
  j["batch"] = ph.batch;
  j["prompt_tokens"] = ph.prompt;
  j["prompt"] = ph.parallel ? "parallel prefill" : "token by token";
  j["prefill_cycles"] = ph.prefill;
  j["kv_cache_fill_cycles"] = ph.fill;
  j["decode_tokens"] = ph.tokens;
  j["decode_cycles"] = ph.decode;
  j["cycles_per_decode_token"] = ph.tokens ? ph.decode / ph.tokens : 0;
  j["decode_tokens_per_s"] = ph.decode ? static_cast<double>(ph.tokens * ph.batch) * per_s(clock, ph.decode) : 0.0;
  j["cycles"] = results.empty() ? 0 : results.back().end;
  return j;
}

void print_decode_run(std::ostream& out, const models::resident::ResidentDecode& rd,
                      const std::deque<platforms::runtime::StepResult>& results, double clock) {
  const DecodePhases ph = decode_phases(rd, results);
  out << fmt::format("  weights       placed in SRAM once before the first layer (untimed image load)\n");
  if (ph.parallel) {
    out << fmt::format(
        "  prefill       {} x {} prompt tokens in one parallel prefill (one sample per column): {} cycles ({} per "
        "position)\n",
        ph.batch, ph.prompt, ph.prefill, ph.prompt ? ph.prefill / ph.prompt : 0);
    if (rd.fills.empty())
      out << "  kv cache      none: the model has no attention layer\n";
    else
      out << fmt::format(
          "  kv cache      the prefill's keys and values copied into the decode layout's caches ({} attention "
          "layer{}, on each PE): {} cycles\n",
          rd.fills.size(), rd.fills.size() == 1 ? "" : "s", ph.fill);
  } else {
    out << fmt::format(
        "  prefill       {} x {} prompt tokens, one position per step, filling the KV caches: {} cycles "
        "({} per position)\n",
        ph.batch, ph.prompt, ph.prefill, ph.prompt ? ph.prefill / ph.prompt : 0);
  }
  out << fmt::format("  decode        {} x {} tokens: {} cycles, {} cycles per decode step, {} tokens/s at {}\n",
                     ph.batch, ph.tokens, ph.decode, ph.tokens ? ph.decode / ph.tokens : 0,
                     rate(static_cast<double>(ph.tokens * ph.batch) * per_s(clock, ph.decode)),
                     units::pretty(clock, "Hz"));
}

}  // namespace wafersim::app

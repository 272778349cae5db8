#include "sim/app/mesh_report.h"

#include <fmt/format.h>

#include <ostream>

#include "models/mesh/kernels.h"
#include "models/mesh/mesh_decode.h"
#include "models/mesh/mesh_prefill.h"
#include "sim/errors.h"

namespace wafersim::app {
using models::mesh::MeshPlan;
using models::mesh::MeshStep;
using models::mesh::StepBound;
using platforms::inference::MeshStepResult;
using platforms::inference::MeshToken;

namespace {

double percent(std::uint64_t part, std::uint64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

nlohmann::ordered_json bound_json(const StepBound& b) {
  return {{"roofline", b.roofline()}, {"binds", b.binds()}, {"compute", b.compute}, {"sram", b.sram},
          {"fabric", b.fabric},       {"edge", b.edge},     {"latency", b.latency}, {"with_latency", b.with_latency()}};
}

std::string region_text(const models::mesh::Region& r) { return fmt::format("{} x {}", r.rows, r.columns); }

// The plan's wafers, one line each.
nlohmann::ordered_json wafers_json(const MeshPlan& p) {
  auto a = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < p.wafers.size(); ++i) {
    const auto& w = p.wafers[i];
    a.push_back({{"wafer", i},
                 {"rows", w.region.rows},
                 {"columns", w.region.columns},
                 {"first_layer", w.first_layer},
                 {"layers", w.layers},
                 {"embedding", w.embedding},
                 {"head", w.head},
                 {"sram_bytes", w.addrs.end},
                 {"weight_bytes", w.addrs.weights},
                 {"kv_cache_bytes", w.addrs.caches},
                 {"activation_bytes", w.addrs.activations}});
    if (p.prefill) {
      a.back()["prefill_sram_bytes"] = w.prefill_end;
      a.back()["prefill_bytes_in_logits"] = w.prefill_in_logits;
    }
  }
  return a;
}

std::vector<MeshStep> bounds_of(const MeshPlan& p, const models::compiler::Target& t, std::size_t i,
                                std::uint64_t position) {
  const auto& w = p.wafers[i];
  const models::mesh::MeshLayout l(p.shape, w.region, w.layers, w.embedding, w.head, models::mesh::collective_stage(t),
                                   models::mesh::buffer_alignment(t), t.sram_bytes());
  auto v = models::mesh::step_bounds(t, l, position, 0);
  // The prefill's products of one layer over all N steps (MeshGEMM) and its steps over the
  // blocks between them.
  using models::mesh::Gemv;
  if (p.prefill && w.layers && l.gemm_positions()) {
    // A pass of the prompt (the whole prompt, or a full pass ending at the prompt's end).
    const std::uint64_t n = p.prefill_chunk ? p.prefill_chunk : p.prefill;
    const models::mesh::PromptChunk c{p.prefill - n, n};
    for (auto g : {Gemv::Qkv, Gemv::O, Gemv::GateUp, Gemv::Down})
      v.push_back(models::mesh::gemm_step(l, t, g, 0, n, l.gemm_positions(), false));
    v.push_back(models::mesh::norm_blocks_step(l, t, Gemv::O, 0, n, false));
    v.push_back(models::mesh::swiglu_blocks_step(l, t, 0, n, false));
    if (w.layers > 1) v.push_back(models::mesh::norm_blocks_step(l, t, Gemv::Down, 0, n, false));
    // Attention's last group (the deepest cache) and its moves.
    const std::uint32_t g = models::mesh::prefill_group(l, c, t.sram_bytes(), models::mesh::MeshPrefill::kDefaultGroup);
    const std::uint64_t first = c.base + (n - 1) / g * g;
    const auto count = static_cast<std::uint32_t>(p.prefill - first);
    v.push_back(models::mesh::qkv_unblock_group_step(l, t, 0, c, g, first, count, false));
    v.push_back(models::mesh::attention_group_step(l, t, 0, c, g, first, count, false));
    v.push_back(models::mesh::block_group_step(l, t, Gemv::O, 0, c, g, first, count, false));
  }
  return v;
}

}  // namespace

std::pair<std::uint32_t, std::uint32_t> parse_mesh_region(const std::string& text) {
  const auto x = text.find('x');
  auto number = [&](const std::string& part) -> std::uint32_t {
    if (part.empty() || part.size() > 5 || part.find_first_not_of("0123456789") != std::string::npos)
      throw sim::InputError(fmt::format("--mesh-region: expected ROWSxCOLUMNS such as 448x512, found '{}'", text));
    return static_cast<std::uint32_t>(std::stoul(part));
  };
  if (x == std::string::npos) number("");
  const std::uint32_t r = number(text.substr(0, x)), c = number(text.substr(x + 1));
  if (!r || !c)
    throw sim::InputError(fmt::format("--mesh-region: rows and columns must be 1 or more, found '{}'", text));
  return {r, c};
}

nlohmann::ordered_json mesh_plan_json(const MeshPlan& p, const models::compiler::Target& t,
                                      const models::ModelSpec& model, const std::string& platform,
                                      std::uint64_t position) {
  nlohmann::ordered_json j;
  j["model"] = model.name;
  j["platform"] = platform;
  j["placement"] = "mesh";
  j["parameters"] = p.shape.parameters();
  j["systems"] = p.systems;
  j["wafers"] = wafers_json(p);
  j["sram_capacity"] = p.sram_capacity;
  j["link_bytes_per_token"] = p.link_bytes;
  j["link_cycles_per_token"] = p.link_cycles;
  j["position"] = position;
  if (p.prefill) j["prefill"] = {{"tokens", p.prefill}, {"pass_tokens", p.prefill_chunk ? p.prefill_chunk : p.prefill}};
  auto kernels = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < p.wafers.size(); ++i)
    for (const auto& s : bounds_of(p, t, i, position))
      kernels.push_back({{"wafer", i},
                         {"step", s.name},
                         {"kernel", s.kernel},
                         {"flops", s.work.flops},
                         {"bound", bound_json(s.bound)}});
  j["kernels"] = kernels;
  j["why"] = p.why;
  return j;
}

void print_mesh_plan(std::ostream& out, const MeshPlan& p, const models::compiler::Target& t,
                     const models::ModelSpec& model, const std::string& platform, std::uint64_t position) {
  out << fmt::format("mesh placement of {} ({} parameters) on {}: {} of {} system{}\n", model.name,
                     p.shape.parameters(), platform, p.wafers.size(), p.systems, p.systems == 1 ? "" : "s");
  for (std::size_t i = 0; i < p.wafers.size(); ++i) {
    const auto& w = p.wafers[i];
    out << fmt::format(
        "  wafer {}     region {} PEs, layers {}..{}{}{}; busiest PE {} B of {} (weights {}, KV caches {}, "
        "activations {})\n",
        i, region_text(w.region), w.first_layer, w.first_layer + w.layers - 1, w.embedding ? ", embedding" : "",
        w.head ? ", final norm and head" : "", w.addrs.end, p.sram_capacity, w.addrs.weights, w.addrs.caches,
        w.addrs.activations);
    if (p.prefill)
      out << fmt::format("              prefill: {} B with MeshGEMM's blocks{}\n", w.prefill_end,
                         w.prefill_in_logits
                             ? fmt::format(" ({} B of them over the decode's logits, which the prefill does not use)",
                                           w.prefill_in_logits)
                             : "");
  }
  if (p.wafers.size() > 1)
    out << fmt::format("  links       {} B of residual stream per token between wafers, {} cycles each\n", p.link_bytes,
                       p.link_cycles);
  out << fmt::format(
      "  kernels     bounds of a decode token at position {}{} (cycles; the roofline's largest term, "
      "and the collectives' latency)\n",
      position,
      p.prefill
          ? fmt::format(" and of the prefill's products, steps over the blocks and last attention group for {} "
                        "tokens{}",
                        p.prefill, p.prefill_chunk ? fmt::format(" in passes of {}", p.prefill_chunk) : std::string())
          : std::string());
  for (std::size_t i = 0; i < p.wafers.size(); ++i)
    for (const auto& s : bounds_of(p, t, i, position))
      out << fmt::format("    wafer {} {:18} {:13} roofline {:7} ({:7}), latency {:6}\n", i, s.name, s.kernel,
                         s.bound.roofline(), s.bound.binds(), s.bound.latency);
  out << fmt::format("  why         {}\n", p.why);
}

namespace {

nlohmann::ordered_json step_json(const MeshStepResult& s) {
  return {{"step", s.name},
          {"kernel", s.kernel},
          {"layer", s.layer},
          {"cycles", s.cycles()},
          {"bound", bound_json(s.bound)},
          {"percent_of_roofline", percent(s.bound.roofline(), s.cycles())},
          {"percent_of_bound", percent(s.bound.with_latency(), s.cycles())},
          {"flops", s.flops},
          {"busy_pe_cycles", s.busy_pe_cycles}};
}

}  // namespace

nlohmann::ordered_json mesh_token_json(const MeshToken& t, const models::ModelSpec& model, const std::string& platform,
                                       double clock_hz, std::uint64_t position) {
  nlohmann::ordered_json j;
  j["model"] = model.name;
  j["platform"] = platform;
  j["placement"] = "mesh";
  j["position"] = position;
  j["wafers"] = wafers_json(t.plan);
  auto runs = nlohmann::ordered_json::array();
  for (const auto& r : t.runs) {
    auto steps = nlohmann::ordered_json::array();
    for (const auto& s : r.run.steps) steps.push_back(step_json(s));
    auto prefill = nlohmann::ordered_json::array();
    for (const auto& p : r.prefill)
      prefill.push_back({{"name", p.name},
                         {"kernel", "gemm"},
                         {"layer", p.layer},
                         {"steps", p.steps},
                         {"steps_simulated", p.simulated},
                         {"cycles_one_step", p.cycles_one},
                         {"cycles_simulated", p.cycles_m},
                         {"cycles", p.cycles},
                         {"flops", p.flops},
                         {"bound",
                          {{"compute", p.bound.compute},
                           {"sram", p.bound.sram},
                           {"fabric", p.bound.fabric},
                           {"edge", p.bound.edge},
                           {"latency", p.bound.latency},
                           {"roofline", p.bound.roofline()},
                           {"binds", p.bound.binds()}}},
                         {"percent_of_roofline", percent(p.bound.roofline(), p.cycles)},
                         {"percent_of_bound", percent(p.bound.with_latency(), p.cycles)}});
    auto kernels = nlohmann::ordered_json::array();
    for (const auto& k : r.prefill_kernels)
      kernels.push_back({{"kernel", k.kernel},
                         {"per", models::mesh::to_string(k.per)},
                         {"steps", k.steps},
                         {"steps_simulated", k.simulated},
                         {"cycles", k.cycles},
                         {"bound", k.bound},
                         {"percent_of_bound", percent(k.bound, k.cycles)}});
    runs.push_back({{"wafers", r.wafers},
                    {"prefill", prefill},
                    {"prefill_kernels", kernels},
                    {"layers_simulated", r.simulated_layers},
                    {"cycles", r.run.cycles()},
                    {"wall_seconds", r.wall_seconds},
                    {"compared", r.compared},
                    {"mismatches", r.mismatches},
                    {"steps", steps}});
  }
  j["runs"] = runs;
  const double seconds = static_cast<double>(t.cycles()) / clock_hz;
  if (t.only_wafer >= 0) j["only_wafer"] = t.only_wafer;
  j["token"] = {{"embedding_cycles", t.embed_cycles},
                {"layer_cycles", t.layer_cycles},
                {"head_cycles", t.head_cycles},
                {"link_cycles", t.link_cycles},
                {"cycles", t.cycles()},
                {"layers", t.layers_total},
                {"layers_simulated", t.layers_simulated},
                {"seconds", seconds},
                {"tokens_per_s", seconds > 0 && t.only_wafer < 0 ? 1.0 / seconds : 0.0}};
  if (t.prefill_tokens) {
    const double ps = static_cast<double>(t.prefill_cycles) / clock_hz;
    j["prefill"] = {{"tokens", t.prefill_tokens},
                    {"kernel",
                     "MeshGEMM (q/k/v, o, gate/up and down of every layer); SwiGLU, the residual adds and the "
                     "norms between products over the blocks; causal attention filling the KV cache and its moves "
                     "between vectors and blocks over groups of tokens; the embedding and the first norm token by "
                     "token"},
                    {"group", t.prefill_group},
                    {"pass_tokens", t.prefill_chunk},
                    {"tokens_sampled", t.prefill_sampled},
                    {"gemm_cycles", t.prefill_gemm_cycles},
                    {"other_cycles", t.prefill_other_cycles},
                    {"cycles", t.prefill_cycles},
                    {"seconds", ps},
                    {"tokens_per_s", ps > 0 ? static_cast<double>(t.prefill_tokens) / ps : 0.0}};
  }
  return j;
}

void print_mesh_token(std::ostream& out, const MeshToken& t, const models::ModelSpec& model,
                      const std::string& platform, double clock_hz, std::uint64_t position) {
  out << fmt::format("decode token of {} at position {} on {}, mesh placement ({} wafer{})\n", model.name, position,
                     platform, t.plan.wafers.size(), t.plan.wafers.size() == 1 ? "" : "s");
  for (const auto& r : t.runs) {
    std::string ws;
    for (auto w : r.wafers) ws += (ws.empty() ? "" : ", ") + std::to_string(w);
    const auto& w = t.plan.wafers[r.wafers[0]];
    out << fmt::format("  wafer {}: region {} PEs, {} of {} layers simulated, {} cycles in {:.1f} s\n", ws,
                       region_text(w.region), r.simulated_layers, w.layers, r.run.cycles(), r.wall_seconds);
    if (!r.prefill.empty()) {
      out << fmt::format(
          "    prefill of {} tokens (MeshGEMM, {} shift steps a product{}):\n", t.prefill_tokens, r.prefill[0].steps,
          r.prefill[0].simulated < r.prefill[0].steps
              ? fmt::format("; runs of 1 and {} simulated, the others at their difference", r.prefill[0].simulated)
              : std::string());
      out << "    step               cycles (1 step, M steps)   roofline (binds)   latency   % roofline   % bound\n";
      for (const auto& p : r.prefill)
        out << fmt::format("    {:18} {:9} ({:6}, {:7}) {:9} ({:7}) {:8} {:10.1f}% {:8.1f}%{}\n", p.name, p.cycles,
                           p.cycles_one, p.cycles_m, p.bound.roofline(), p.bound.binds(), p.bound.latency,
                           percent(p.bound.roofline(), p.cycles), percent(p.bound.with_latency(), p.cycles),
                           p.simulated ? "" : "   (an earlier pass's blocks: its cycles)");
      out << "    between products   once a            steps  simulated     cycles      bound   % bound\n";
      for (const auto& k : r.prefill_kernels)
        out << fmt::format(
            "    {:18} {:14} {:9} {:10} {:10} {:10} {:8.1f}%\n", k.kernel,
            k.per == models::mesh::PrefillPer::Between ? "gap of layers" : models::mesh::to_string(k.per), k.steps,
            k.simulated, k.cycles, k.bound, percent(k.bound, k.cycles));
    }
    out << "    step        kernel      cycles   roofline (binds)   latency   % roofline   % bound\n";
    for (const auto& s : r.run.steps)
      out << fmt::format("    {:11} {:10} {:7} {:9} ({:7}) {:8} {:10.1f}% {:8.1f}%\n", s.name, s.kernel, s.cycles(),
                         s.bound.roofline(), s.bound.binds(), s.bound.latency, percent(s.bound.roofline(), s.cycles()),
                         percent(s.bound.with_latency(), s.cycles()));
    if (r.compared)
      out << fmt::format("    checked   {} values against the host's computation: {}\n", r.compared,
                         r.mismatches ? fmt::format("{} differ (first: {})", r.mismatches, r.first_mismatch)
                                      : std::string("all equal bit for bit"));
  }
  const double seconds = static_cast<double>(t.cycles()) / clock_hz;
  if (t.prefill_tokens) {
    const double ps = static_cast<double>(t.prefill_cycles) / clock_hz;
    out << fmt::format(
        "  prefill     {} tokens through {} layers: products {} + between them {} = {} cycles, {:.3f} ms, "
        "{:.0f} tokens/s at {:.2f} GHz\n",
        t.prefill_tokens, t.layers_total, t.prefill_gemm_cycles, t.prefill_other_cycles, t.prefill_cycles, ps * 1e3,
        ps > 0 ? static_cast<double>(t.prefill_tokens) / ps : 0.0, clock_hz / 1e9);
    if (t.prefill_group)
      out << fmt::format("  attention   over groups of {} prompt token{} at once\n", t.prefill_group,
                         t.prefill_group == 1 ? "" : "s");
    if (t.prefill_chunk < t.prefill_tokens)
      out << fmt::format("  passes      the prompt in passes of {} tokens, each through every layer before the next\n",
                         t.prefill_chunk);
    if (t.prefill_sampled)
      out << "  sampled     the steps of the first and last attention group (and wafer input token) of each "
             "cache depth simulated; each other takes the nearer of the two's cycles\n";
  }
  if (t.only_wafer >= 0)
    out << fmt::format(
        "  wafer {}     its part of the token: embedding {} + layers {} + final norm and head {} + "
        "link out {} = {} cycles, {:.1f} us at {:.2f} GHz (the other wafers not simulated)\n",
        t.only_wafer, t.embed_cycles, t.layer_cycles, t.head_cycles, t.link_cycles, t.cycles(), seconds * 1e6,
        clock_hz / 1e9);
  else
    out << fmt::format(
        "  token       embedding {} + layers {} + final norm and head {} + links {} = {} cycles: "
        "{:.1f} us, {:.0f} tokens/s at {:.2f} GHz\n",
        t.embed_cycles, t.layer_cycles, t.head_cycles, t.link_cycles, t.cycles(), seconds * 1e6,
        seconds > 0 ? 1.0 / seconds : 0.0, clock_hz / 1e9);
  if (t.layers_simulated < t.layers_total)
    out << fmt::format(
        "  layers      {} of {} simulated: every layer runs the same program at other addresses, so "
        "each of the others takes its wafer's simulated layer's cycles\n",
        t.layers_simulated, t.layers_total);
}

}  // namespace wafersim::app

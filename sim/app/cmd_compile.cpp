// `wafersim compile`: map a model onto a platform and print the mapping (no simulation).

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <tuple>

#include "hw/isa/disassemble.h"
#include "models/compiler/compiler.h"
#include "models/mesh/mesh_plan.h"
#include "platforms/inference/mesh_token.h"
#include "platforms/memory_estimate.h"
#include "sim/app/cli.h"
#include "sim/app/mesh_report.h"
#include "sim/app/model_report.h"
#include "sim/app/resident_report.h"
#include "sim/app/workflows.h"
#include "sim/errors.h"

namespace wafersim::app {
namespace {

struct CompileCommand {
  ModelArgs model;
  std::string positional;       // the platform; the model in the older spelling
  std::string platform_option;  // --platform/-p, the older spelling
  std::vector<std::string> set;
  bool json = false;
  std::string emit;
  std::uint64_t prompt = 0;
  std::uint64_t prefill = 0;
  std::uint64_t prefill_chunk = 0;
  std::string mesh_region;

  // `compile PLATFORM --model MODEL`, or the older `compile MODEL [--platform PLATFORM]`.
  void resolve_spelling() {
    if (!model.model.empty()) {
      if (!platform_option.empty() && !positional.empty())
        throw sim::InputError(fmt::format("two platforms: '{}' and --platform '{}'", positional, platform_option));
      if (!platform_option.empty()) {
        note_new_spelling("wafersim compile --model MODEL --platform PLATFORM",
                          "wafersim compile PLATFORM --model MODEL");
        positional = platform_option;
      }
      if (positional.empty()) positional = "tiny";
      return;
    }
    if (positional.empty()) throw sim::InputError("compile needs a model: wafersim compile PLATFORM --model MODEL");
    note_new_spelling("wafersim compile MODEL --platform PLATFORM", "wafersim compile PLATFORM --model MODEL");
    model.model = positional;
    positional = platform_option.empty() ? "tiny" : platform_option;
  }

  void execute() {
    resolve_spelling();
    auto loaded = platforms::load_platform(positional, set);
    auto m = model.load();
    const models::compiler::Target target{loaded.spec.wafer, loaded.spec.fabric};
    if (model.placement == "resident") return resident(loaded, m, target);
    if (model.placement == "mesh") return mesh(loaded, m, target);
    if (prefill) throw sim::InputError("--prefill plans the mesh placement's prefill: add --placement mesh");
    const auto cm = models::compiler::compile(m.spec, target, model.options(!emit.empty()));
    if (!emit.empty()) {
      std::ofstream f(emit);
      if (!f) throw sim::InputError(fmt::format("--emit: cannot write '{}'", emit));
      for (const auto& p : cm.programs) {
        f << fmt::format(";; ===== step: {} =====\n", p.name());
        f << hw::isa::disassemble(p.code);
      }
    }
    const auto memory = platforms::estimate_memory(loaded.spec, {false, loaded.spec.cluster.systems});
    if (json) {
      auto j = mapping_json(cm, loaded.spec.name);
      j["memory_estimate_bytes"] = memory.bytes;
      std::cout << j.dump(2) << "\n";
      return;
    }
    print_mapping(std::cout, cm, loaded.spec.name);
    std::cout << fmt::format("  simulating  about {} of host memory to run it ({})\n",
                             platforms::memory_text(memory.bytes), memory.breakdown);
    if (!emit.empty()) std::cout << fmt::format("  code        {} (every PE program, as assembly)\n", emit);
  }

  void mesh(const platforms::LoadedPlatform& loaded, const models::LoadedModel& m,
            const models::compiler::Target& target) const {
    if (!emit.empty()) throw sim::InputError("--emit: the mesh placement's programs are built when it runs (infer)");
    auto t = platforms::inference::mesh_target(loaded.spec);
    if (!mesh_region.empty()) std::tie(t.rows, t.columns) = parse_mesh_region(mesh_region);
    t.prefill = prefill;
    if (prefill_chunk && !prefill) throw sim::InputError("--mesh-prefill-chunk: passes of a prefill (add --prefill P)");
    t.prefill_chunk = prefill_chunk;
    if (prefill >= m.spec.sequence)
      throw sim::InputError(fmt::format(
          "--prefill: expected fewer prompt tokens than the KV cache's {} positions (the model's sequence), found {}",
          m.spec.sequence, prefill));
    const auto plan = models::mesh::plan_mesh(m.spec, t);
    const std::uint64_t position = prompt ? prompt : m.spec.sequence / 2;
    if (position >= m.spec.sequence)
      throw sim::InputError(
          fmt::format("--prompt-len {} leaves no room in the KV cache of {} positions", position, m.spec.sequence));
    if (json)
      std::cout << mesh_plan_json(plan, target, m.spec, loaded.spec.name, position).dump(2) << "\n";
    else
      print_mesh_plan(std::cout, plan, target, m.spec, loaded.spec.name, position);
  }

  void resident(const platforms::LoadedPlatform& loaded, const models::LoadedModel& m,
                const models::compiler::Target& target) const {
    if (!emit.empty()) throw sim::InputError("--emit: the weight-resident placement is planned analytically (no code)");
    const models::resident::ClusterTarget ct{target, loaded.spec.cluster.systems,
                                             loaded.spec.system.io_bandwidth_bits_per_s()};
    const auto plan = models::resident::plan_resident(m.spec, ct, prompt);
    if (json)
      std::cout << resident_json(plan, m.spec, loaded.spec.name, loaded.spec.wafer.clock.hz).dump(2) << "\n";
    else
      print_resident(std::cout, plan, m.spec, loaded.spec.name, loaded.spec.wafer.clock.hz);
  }
};

}  // namespace

void add_compile_command(CLI::App& app) {
  auto cmd = std::make_shared<CompileCommand>();
  CLI::App* sub = app.add_subcommand(
      "compile",
      "map a model onto a platform: per layer the region, SRAM per PE, colors, edge wavelets, FLOPs and "
      "the analytical lower bound on cycles with what binds it (docs/compiler.md)");
  std::string help = "the model: a YAML file or a built-in preset (";
  auto names = models::model_preset_names();
  for (std::size_t i = 0; i < names.size(); ++i) help += (i ? ", " : "") + names[i];
  std::string platforms_help = "platform: a YAML file or a built-in preset (";
  auto platform_names = platforms::preset_names();
  for (std::size_t i = 0; i < platform_names.size(); ++i) platforms_help += (i ? ", " : "") + platform_names[i];
  sub->add_option("platform", cmd->positional, platforms_help + "); default: tiny")->type_name("PLATFORM");
  sub->add_option("--model,-m", cmd->model.model, help + ")")->type_name("MODEL");
  // The older spelling `compile MODEL --platform PLATFORM`, hidden; it still works, with a notice.
  sub->add_option("--platform,-p", cmd->platform_option, "now the positional PLATFORM")->group("");
  sub->add_option("--set", cmd->set, "override a platform key (repeatable)")->type_name("KEY=VALUE");
  cmd->model.add(*sub, ModelArgs::Use::Compile);
  sub->add_flag("--json", cmd->json, "print the mapping as one JSON object");
  sub->add_option("--emit", cmd->emit, "also generate every PE program and write them to FILE as assembly")
      ->type_name("FILE");
  sub->add_option("--prompt-len", cmd->prompt,
                  "with --placement resident: prompt tokens per sample for the prefill figures (default: the model's "
                  "sequence, which is also the KV cache's length)")
      ->type_name("N");
  sub->add_option("--prefill", cmd->prefill,
                  "with --placement mesh: plan a region (at most twice as long as wide) for a prefill of N prompt "
                  "tokens and give its products' bounds (MeshGEMM)")
      ->type_name("N")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20));
  sub->add_option("--mesh-prefill-chunk", cmd->prefill_chunk,
                  "with --prefill: plan for the prompt in passes of N tokens (MeshGEMM's blocks of ceil(N / side) "
                  "tokens); default: one pass, or passes of the region's shorter side where the whole prompt's "
                  "blocks do not fit")
      ->type_name("N")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20));
  sub->add_option("--mesh-region", cmd->mesh_region,
                  "with --placement mesh: the region on every wafer, ROWSxCOLUMNS, instead of the planner's")
      ->type_name("RxC");
  sub->footer(
      "Examples:\n"
      "  wafersim compile wse2 --model gpt3-xl\n"
      "  wafersim compile tiny --model tiny-mlp --emit tiny-mlp.s\n"
      "  wafersim compile wse2 --model gpt3-xl --placement resident --json\n"
      "With --placement resident every layer gets its own region (bands of rows on one wafer, or over the\n"
      "wafers of a cluster platform when one is too small) holding its weights and KV cache in SRAM, and tokens\n"
      "are pipelined through the regions: per layer the region, SRAM per PE, the per-token bound, and the\n"
      "pipeline's throughput (tokens/s) with what binds it (inference only).\n"
      "The mapping is computed analytically, so it works for a whole WSE-2 (wafersim compile wse2 --model\n"
      "gpt3-xl); `wafersim run PLATFORM --model MODEL` simulates it. The bound of a layer is the largest of: the\n"
      "busiest PE's datapath steps or instruction issues (compute), its SRAM port accesses (sram), its ramp or\n"
      "the busiest router link (fabric), and the busiest edge channel (edge), one wavelet per cycle each.\n"
      "The code column says whether a step has PE code (pe: --emit and run generate it) or is planned from the\n"
      "layout only (analytical: no kernel yet, or the kernel's buffers do not fit the SRAM).\n"
      "With --placement mesh (Llama-style decoders) every layer is spread over one region per wafer, layers\n"
      "pipelined over the fewest wafers that hold them: the regions, SRAM per PE and each kernel's bound for a\n"
      "decode token at position --prompt-len (default: half the model's sequence).\n"
      "A model that does not fit (SRAM per PE, colors) is an error naming the layer and the shortfall (exit 2).");
  sub->callback([cmd] { cmd->execute(); });
}

}  // namespace wafersim::app

// `wafersim compile`: map a model onto a platform and print the mapping (no simulation).

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>

#include "hw/isa/disassemble.h"
#include "models/compiler/compiler.h"
#include "platforms/memory_estimate.h"
#include "sim/app/cli.h"
#include "sim/app/model_report.h"
#include "sim/app/resident_report.h"
#include "sim/errors.h"

namespace wafersim::app {
namespace {

struct CompileCommand {
  ModelArgs model;
  std::string platform = "tiny";
  std::vector<std::string> set;
  bool json = false;
  std::string emit;
  std::uint64_t prompt = 0;

  void execute() const {
    auto loaded = platforms::load_platform(platform, set);
    auto m = model.load();
    const models::compiler::Target target{loaded.spec.wafer, loaded.spec.fabric};
    if (model.placement == "resident") return resident(loaded, m, target);
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
  std::string help = "model: a YAML file or a built-in preset (";
  auto names = models::model_preset_names();
  for (std::size_t i = 0; i < names.size(); ++i) help += (i ? ", " : "") + names[i];
  sub->add_option("model", cmd->model.model, help + ")")->required();
  sub->add_option("--platform,-p", cmd->platform, "platform: a YAML file or a built-in preset")->capture_default_str();
  sub->add_option("--set", cmd->set, "override a platform key (repeatable)")->type_name("KEY=VALUE");
  cmd->model.add(*sub, ModelArgs::Use::Compile);
  sub->add_flag("--json", cmd->json, "print the mapping as one JSON object");
  sub->add_option("--emit", cmd->emit, "also generate every PE program and write them to FILE as assembly")
      ->type_name("FILE");
  sub->add_option("--prompt-len", cmd->prompt,
                  "with --placement resident: prompt tokens per sample for the prefill figures (default: the model's "
                  "sequence, which is also the KV cache's length)")
      ->type_name("N");
  sub->footer(
      "With --placement resident every layer gets its own region (bands of rows on one wafer, or over the\n"
      "wafers of a cluster platform when one is too small) holding its weights and KV cache in SRAM, and tokens\n"
      "are pipelined through the regions: per layer the region, SRAM per PE, the per-token bound, and the\n"
      "pipeline's throughput (tokens/s) with what binds it (inference only).\n"
      "The mapping is computed analytically, so it works for a whole WSE-2 (wafersim compile gpt3-xl --platform\n"
      "wse2); `wafersim run PLATFORM --model MODEL` simulates it. The bound of a layer is the largest of: the\n"
      "busiest PE's datapath steps or instruction issues (compute), its SRAM port accesses (sram), its ramp or\n"
      "the busiest router link (fabric), and the busiest edge channel (edge), one wavelet per cycle each.\n"
      "The code column says whether a step has PE code (pe: --emit and run generate it) or is planned from the\n"
      "layout only (analytical: no kernel yet, or the kernel's buffers do not fit the SRAM).\n"
      "A model that does not fit (SRAM per PE, colors) is an error naming the layer and the shortfall (exit 2).");
  sub->callback([cmd] { cmd->execute(); });
}

}  // namespace wafersim::app

// `wafersim memoryx-plan`: where MemoryX would keep a model's weights and optimizer state.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <iostream>

#include "memoryx/placement.h"
#include "sim/app/choices.h"
#include "sim/app/cli.h"
#include "sim/errors.h"
#include "sim/units/quantity.h"

namespace wafersim::app {
namespace {

struct PlanCommand {
  PlatformArgs platform;
  double params = 0;
  std::uint32_t layers = 1;
  std::string optimizer = "adam";
  bool json = false;

  void execute() const {
    if (!(params >= 1) || std::floor(params) != params || params > 1e18)
      throw sim::InputError(fmt::format("--params: expected a whole number of parameters >= 1, found {}", params));
    const auto total = static_cast<std::uint64_t>(params);
    if (layers == 0 || layers > total)
      throw sim::InputError(
          fmt::format("--layers: expected 1 .. {} (one parameter per layer at least), found {}", total, layers));
    const auto kind = memoryx::parse_optimizer_kind(optimizer);
    auto loaded = platform.load();
    const auto& cfg = loaded.spec.memoryx;
    std::vector<memoryx::LayerSpec> specs;
    for (std::uint32_t i = 0; i < layers; ++i)
      specs.push_back({fmt::format("layer{}", i), total / layers + (i < total % layers ? 1 : 0)});
    const auto p = memoryx::place(specs, cfg, kind);

    if (json) {
      nlohmann::ordered_json j;
      j["platform"] = loaded.spec.name;
      j["optimizer"] = memoryx::to_string(kind);
      j["params"] = total;
      j["bytes_per_param"] = cfg.bytes_per_param;
      j["dram"] = {{"capacity", cfg.dram.capacity.bytes()}, {"used", p.dram_used}};
      j["flash"] = {{"capacity", cfg.flash.capacity.bytes()}, {"used", p.flash_used}};
      j["staging"] = {{"slots", p.staging_slots}, {"slot_bytes", p.staging_slot_bytes}, {"bytes", p.staging_bytes}};
      auto& arr = j["layers"] = nlohmann::ordered_json::array();
      for (std::size_t i = 0; i < specs.size(); ++i)
        arr.push_back({{"name", specs[i].name},
                       {"params", specs[i].params},
                       {"tier", memoryx::to_string(p.layers[i].tier)},
                       {"offset", p.layers[i].offset},
                       {"bytes", p.layers[i].bytes}});
      std::cout << j.dump(2) << "\n";
      return;
    }
    using units::pretty;
    std::cout << fmt::format("{}: {} parameters in {} layer(s), {} at {} B per parameter\n", loaded.spec.name, total,
                             layers, memoryx::to_string(kind), cfg.bytes_per_param);
    std::cout << fmt::format(
        "  DRAM   {} of {} used ({} staging: {} slot(s) of {})\n", pretty(static_cast<double>(p.dram_used), "B"),
        pretty(static_cast<double>(cfg.dram.capacity.bytes()), "B"), pretty(static_cast<double>(p.staging_bytes), "B"),
        p.staging_slots, pretty(static_cast<double>(p.staging_slot_bytes), "B"));
    std::cout << fmt::format("  flash  {} of {} used, {} layer(s)\n", pretty(static_cast<double>(p.flash_used), "B"),
                             pretty(static_cast<double>(cfg.flash.capacity.bytes()), "B"), p.flash_layers());
    std::cout << fmt::format("  {:<10} {:>16} {:>6} {:>18} {:>16}\n", "layer", "params", "tier", "offset (B)", "bytes");
    for (std::size_t i = 0; i < specs.size(); ++i)
      std::cout << fmt::format("  {:<10} {:>16} {:>6} {:>18} {:>16}\n", specs[i].name, specs[i].params,
                               memoryx::to_string(p.layers[i].tier), p.layers[i].offset, p.layers[i].bytes);
  }
};

}  // namespace

void add_memoryx_plan_command(CLI::App& app) {
  auto cmd = std::make_shared<PlanCommand>();
  CLI::App* sub = app.add_subcommand(
      "memoryx-plan", "show where MemoryX keeps a model's weights and optimizer state (DRAM first, then flash)");
  cmd->platform.add(*sub, "");
  sub->add_option("--params", cmd->params, "parameters of the model (e.g. 1.3e9)")->required();
  sub->add_option("--layers", cmd->layers, "split the parameters into this many equal layers")->capture_default_str();
  sub->add_option("--optimizer", cmd->optimizer, "the update rule (decides the moments kept)")
      ->check(one_of({"sgd", "momentum", "adam", "adamw"}))
      ->capture_default_str();
  sub->add_flag("--json", cmd->json,
                "print one JSON object: platform, optimizer, params, bytes_per_param, dram {capacity, used}, "
                "flash {capacity, used}, staging {slots, slot_bytes, bytes}, layers [{name, params, tier, offset, "
                "bytes}]");
  sub->footer(
      "Examples:\n"
      "  wafersim memoryx-plan andromeda --params 1.3e9 --layers 24\n"
      "  wafersim memoryx-plan cs2-cluster --params 175e9 --layers 96 --optimizer sgd --json\n"
      "Each layer's region is params x memoryx.bytes_per_param (FP32 weight, gradient, moments), rounded up to the\n"
      "tier's page size. When the model does not fit DRAM, (memoryx.prefetch_depth + 1) staging slots for\n"
      "flash-resident weights are reserved in DRAM first. A model that fits nowhere is exit code 2, naming the\n"
      "first layer that does not fit and the free bytes of each tier. See docs/memoryx.md.");
  sub->callback([cmd] { cmd->execute(); });
}

}  // namespace wafersim::app

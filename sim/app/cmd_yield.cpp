// `wafersim yield`: the Monte Carlo of wafers under random defects over a platform's physical
// array (fabric/defects/yield.h): the wafers that still present the logical grid, the cores
// spent on redundancy and the detours' hop stretch, at one density and over a curve.

#include <fmt/format.h>

#include <iostream>

#include "fabric/defects/yield.h"
#include "sim/app/cli.h"
#include "sim/errors.h"

namespace wafersim::app {
namespace {

using fabric::defects::YieldPoint;

std::string percent(double v) { return fmt::format("{:.1f}%", 100 * v); }

struct YieldCommand {
  PlatformArgs platform;
  double density = 0;
  double area = 0;
  std::uint32_t trials = 0;
  std::uint64_t seed = 1;
  bool json = false;

  void execute() const {
    const auto loaded = platform.load();
    const auto& spec = loaded.spec;
    fabric::defects::YieldOptions o;
    o.density_per_mm2 = density;
    o.core_area_mm2 = area > 0 ? area : spec.defects.core_area_mm2;
    o.trials = trials;
    o.seed = seed;
    const auto array = spec.physical_array();
    const auto study = fabric::defects::yield_study(array, spec.redundancy, o);
    if (json) {
      auto j = fabric::defects::to_json(study);
      j["platform"] = spec.name;
      std::cout << j.dump(2) << "\n";
      return;
    }
    print(spec, array, study);
  }

  static void print(const platforms::PlatformSpec& spec, const fabric::defects::PhysicalArray& a,
                    const fabric::defects::YieldStudy& st) {
    const YieldPoint& p = st.point;
    const char* side = a.rows() ? "row" : "column";
    std::cout << fmt::format("wafersim yield: {}, {} x {} logical grid on a {} x {} physical array ({})\n", spec.name,
                             a.logical_width(), a.logical_height(), a.width(), a.height(),
                             a.spares() ? fmt::format("{} spare {}{} per {} {}s", a.spares(), side,
                                                      a.spares() == 1 ? "" : "s", a.group_size(0), side)
                                        : std::string("no spares"));
    const std::uint64_t spent = p.physical_cores - p.logical_cores;
    std::cout << fmt::format("  cores      {} physical, {} logical: {} active, {} ({}) spent on redundancy\n",
                             p.physical_cores, p.logical_cores, percent(p.active_share()), spent,
                             percent(1 - p.active_share()));
    std::cout << fmt::format("  defects    {:g} per mm^2 on {:g} mm^2 cores: {:.3g} dead per wafer (mean)\n",
                             p.density_per_mm2, p.core_area_mm2, p.mean_dead);
    std::cout << fmt::format("  wafers     {} of {} present the grid: {} (independent defects, closed form: {})\n",
                             p.good, p.trials, percent(p.yield()), percent(p.independent_yield));
    std::cout << fmt::format(
        "  detours    {:.6f} hops per logical link (mean over good wafers; {:.4f}% of links detour), longest {} "
        "hops\n",
        p.mean_stretch, 100 * p.detour_share, p.worst_stretch);
    std::cout << "\n  yield over density (per mm^2) and core area (the same silicon in cores of that size):\n";
    std::string head = fmt::format("  {:>10} {:>9}", "area mm^2", "cores");
    for (double d : st.densities) head += fmt::format(" {:>8.3g}", d);
    std::cout << head << "\n";
    for (std::size_t i = 0; i < st.areas.size(); ++i) {
      const YieldPoint& first = st.curve[i * st.densities.size()];
      std::string row = fmt::format("  {:>10.4g} {:>9}", st.areas[i], first.logical_cores);
      for (std::size_t k = 0; k < st.densities.size(); ++k)
        row += fmt::format(" {:>8}", percent(st.curve[i * st.densities.size() + k].yield()));
      std::cout << row << "\n";
    }
    std::cout << "\n  mean hops per logical link on the good wafers (the same grid):\n" << head << "\n";
    for (std::size_t i = 0; i < st.areas.size(); ++i) {
      const YieldPoint& first = st.curve[i * st.densities.size()];
      std::string row = fmt::format("  {:>10.4g} {:>9}", st.areas[i], first.logical_cores);
      for (std::size_t k = 0; k < st.densities.size(); ++k) {
        const YieldPoint& q = st.curve[i * st.densities.size() + k];
        row += q.good ? fmt::format(" {:>8.5f}", q.mean_stretch) : fmt::format(" {:>8}", "-");
      }
      std::cout << row << "\n";
    }
  }
};

}  // namespace

void add_yield_command(CLI::App& app) {
  auto cmd = std::make_shared<YieldCommand>();
  CLI::App* sub = app.add_subcommand(
      "yield",
      "Monte Carlo of wafers under random defects on a platform's physical array: the wafers that can still present "
      "the logical grid, the cores spent on redundancy and the hops the detours add (docs/defects.md)");
  cmd->platform.add(*sub, "");
  sub->add_option("--defect-density", cmd->density, "defects per mm^2 of core silicon")
      ->required()
      ->check(CLI::Range(0.0, 1e6));
  sub->add_option("--core-area", cmd->area, "mm^2 per core (default: the platform's defects.core_area_mm2)")
      ->check(CLI::Range(1e-6, 1e4));
  sub->add_option("--trials", cmd->trials, "wafers sampled per point")->required()->check(CLI::Range(1u, 10000000u));
  sub->add_option("--seed", cmd->seed, "random seed; the same seed gives the same figures")->capture_default_str();
  sub->add_flag("--json", cmd->json, "print one JSON object: the point, and the curve over density and core area");
  sub->footer(
      "Examples:\n"
      "  wafersim yield wse3 --defect-density 0.001 --trials 1000\n"
      "  wafersim yield wse3 --defect-density 0.001 --trials 200 --json > yield.json && scripts/plot_yield.py "
      "yield.json\n"
      "Each core is dead with probability 1 - exp(-density x area), independently; a wafer presents its grid when "
      "every\ngroup of every line keeps no more dead cores than its spares and its bypass links reach "
      "(docs/defects.md).");
  sub->callback([cmd] { cmd->execute(); });
}

}  // namespace wafersim::app

// `wafersim report RUN_DIR`: one self-contained HTML page of a run's traces.

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "sim/app/cli.h"
#include "sim/app/report/report_data.h"
#include "sim/app/report/report_html.h"
#include "sim/errors.h"

namespace wafersim::app {
namespace {

struct ReportCommand {
  std::string run_dir;
  std::string out;
  report::ReportOptions options;

  void execute() const {
    const auto data = report::load_report_data(run_dir, options);
    const std::string html = report::render_html(data);
    const std::filesystem::path path =
        out.empty() ? std::filesystem::path(run_dir) / "report.html" : std::filesystem::path(out);
    write_file_atomic(path, html);
    std::cout << fmt::format("wafersim report: {} ({} KiB, self-contained: open it in any browser, offline)\n",
                             path.string(), (html.size() + 1023) / 1024);
  }
};

}  // namespace

void add_report_command(CLI::App& app) {
  auto cmd = std::make_shared<ReportCommand>();
  CLI::App* sub = app.add_subcommand(
      "report", "write an HTML page of a run's traces: congestion heatmaps, throughput, hotspots, bandwidth, steps");
  sub->add_option("run_dir", cmd->run_dir,
                  "a run folder written with --trace (e.g. wafersim traffic ... --trace windows)")
      ->required()
      ->type_name("RUN_DIR");
  sub->add_option("-o,--out", cmd->out, "the HTML file to write (default: RUN_DIR/report.html)")->type_name("FILE");
  sub->add_option("--frames", cmd->options.frames, "at most this many heatmap frames (windows merge into frames)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000u));
  sub->add_option("--top", cmd->options.top, "hotspots listed")->capture_default_str()->check(CLI::Range(1u, 10000u));
  sub->footer(
      "The page has everything inline (SVG and script): it opens offline and can be mailed as one file.\n"
      "Sections a run did not record (MemoryX and SwarmX without a cluster run, PE busy and SRAM without the\n"
      "PE core) are shown as absent, with the reason. Each heatmap and chart exports as SVG.\n"
      "Examples:\n"
      "  wafersim traffic tiny --pattern hotspot --hotspot 5,2 --rate 0.2 --trace windows,timeline -o hot\n"
      "  wafersim report hot -o hot.html");
  sub->callback([cmd] { cmd->execute(); });
}

}  // namespace wafersim::app

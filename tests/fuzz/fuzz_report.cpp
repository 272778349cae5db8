// libFuzzer target: a run folder as `wafersim report` reads it (docs/trace.md). The input is
// split at lines "--8<--" into trace/meta.json, the window table trace/fabric-w0.csv,
// run.json and stats.json (missing parts: a run.json and meta.json with the same run id, an
// empty table, "{}"), written to a per-process folder and loaded as a report.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/app/report/report_data.h"
#include "sim/errors.h"
#include "tests/fuzz/input_files.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("wafersim-fuzz-report-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "trace");
  const auto p = wafersim::fuzz::split_input(data, size, 4);
  wafersim::fuzz::write_file(dir / "trace/meta.json", p[0]);
  wafersim::fuzz::write_file(dir / "trace/fabric-w0.csv", p.size() > 1 ? p[1] : "");
  wafersim::fuzz::write_file(dir / "run.json", p.size() > 2 ? p[2] : "{\"format\": \"wafersim-run/1\"}");
  wafersim::fuzz::write_file(dir / "stats.json", p.size() > 3 ? p[3] : "{}");
  try {
    wafersim::app::report::ReportOptions options;
    auto j = wafersim::app::report::load_report_data(dir, options);
    (void)j;
  } catch (const wafersim::sim::InputError&) {
  }
  return 0;
}

#pragma once
// What a run folder's report shows, read from its files (run.json, stats.json and the
// trace/ folder, docs/trace.md) and reduced to a bounded size: heatmap frames, time series,
// hotspots, link bandwidth and the per-step breakdown, as one JSON object for the page.

#include <cstdint>
#include <filesystem>

#include <nlohmann/json.hpp>

namespace wafersim::app::report {

struct ReportOptions {
  std::uint32_t frames = 40;  // at most this many heatmap frames (windows merge into frames)
  std::uint32_t top = 20;     // hotspots listed
};

// Throws sim::InputError (exit code 2) naming the file and what is wrong when the folder is
// not a run folder, has no trace, or a trace file does not match its description.
nlohmann::ordered_json load_report_data(const std::filesystem::path& run_dir, const ReportOptions& options);

}  // namespace wafersim::app::report

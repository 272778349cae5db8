#pragma once
// The check of a run folder's trace description (trace/meta.json, docs/trace.md) before a
// report reads anything it names: every field the report uses has its type, range and
// consistency checked against the run, so that a corrupted or foreign folder is an input
// error, never a crash, an endless allocation or a file read outside the folder.

#include <cstdint>
#include <filesystem>

#include <nlohmann/json.hpp>

namespace wafersim::app::report {

// Limits on what a report takes from a trace (docs/reliability.md).
inline constexpr std::uint64_t kMaxReportWindows = 1u << 20;
inline constexpr std::uint64_t kMaxReportCells = 1u << 20;
inline constexpr std::uint64_t kMaxReportColors = 4096;
inline constexpr std::uint64_t kMaxReportBytes = 1ull << 30;  // the report's own working memory

// Throws sim::InputError naming meta.json (or the table) and the key when anything is out of
// place: an unknown format, a run id that is not the run's (`run`, from run.json), a count
// outside its range, grids whose sizes disagree, a table that is not a plain file name inside
// `trace_dir`, or a trace whose report would need more than kMaxReportBytes at `frames` frames.
void check_trace_meta(const nlohmann::ordered_json& meta, const nlohmann::ordered_json& run,
                      const std::filesystem::path& trace_dir, std::uint32_t frames);

// Whether `name` is a plain file name (no folder, not hidden, not "." or ".."), as every file a
// trace names must be.
bool plain_file_name(const std::string& name);

}  // namespace wafersim::app::report

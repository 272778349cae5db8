#pragma once
// Reading an input file whole, within a size limit: the one way every reader of user files
// (YAML, PE programs, route tables, masks, traces, sweep results) gets at their bytes.

#include <cstdint>
#include <string>

namespace wafersim::sim::config {

// Size limits, stated in docs/reliability.md.
inline constexpr std::uint64_t kMaxYamlBytes = 16ull << 20;     // platform, model, routes, sweep
inline constexpr std::uint64_t kMaxProgramBytes = 16ull << 20;  // PE assembly
inline constexpr std::uint64_t kMaxMaskBytes = 256ull << 20;    // weight masks
inline constexpr std::uint64_t kMaxJsonBytes = 256ull << 20;    // run and sweep results, trace JSON
inline constexpr std::uint64_t kMaxTableBytes = 1ull << 30;     // trace window tables (CSV)

// Why `path` cannot be read as an input file, or "" when it is a regular file that can be
// opened: "no such file", "not a readable file (a directory)", "(a FIFO)", "(a device)", ...
// Never opens a FIFO or device (opening one can block or never end).
std::string unreadable_reason(const std::string& path);

// Reads the regular file `path` whole. Throws ConfigError at "PATH: error: cannot read WHAT:
// REASON" when it is missing, not a regular file, unreadable, or longer than `max_bytes`
// (the message names the limit).
std::string read_input_file(const std::string& path, const std::string& what, std::uint64_t max_bytes);

// Checks that the file (or regular-file path) `path` is within `max_bytes` without reading it;
// throws as read_input_file. For readers that stream a file line by line.
void check_input_file(const std::string& path, const std::string& what, std::uint64_t max_bytes);

}  // namespace wafersim::sim::config

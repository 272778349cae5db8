#pragma once
// The --trace options every simulating command shares: what is recorded, for which PEs or
// regions, and where it goes (docs/trace.md).

#include <CLI/CLI.hpp>

#include <string>

#include "sim/trace/trace_options.h"

namespace wafersim::app {

struct TraceArgs {
  std::string kinds, region, pes, by_color = "auto", out;
  std::uint64_t window = 0;
  std::uint32_t max_windows = 1000;
  std::uint32_t cells = 4096;
  std::uint64_t max_events = 1'000'000;
  CLI::Option* max_windows_option = nullptr;
  void add(CLI::App& cmd);
  // Whether --trace-max-windows was given (commands may choose another default).
  [[nodiscard]] bool max_windows_given() const { return max_windows_option && max_windows_option->count() > 0; }
  // The options, parsed and checked (sim::InputError naming the option on bad input).
  [[nodiscard]] sim::trace::TraceOptions options() const;
  [[nodiscard]] bool any() const { return options().any(); }
};

}  // namespace wafersim::app

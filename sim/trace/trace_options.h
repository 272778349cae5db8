#pragma once
// What a run traces, for which PEs and regions, and where the files go (--trace options).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace wafersim::sim::trace {

// A rectangle of PEs (routers), corners included.
struct Rect {
  std::uint32_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  [[nodiscard]] bool contains(std::uint32_t x, std::uint32_t y) const {
    return x >= x0 && x <= x1 && y >= y0 && y <= y1;
  }
  [[nodiscard]] std::uint32_t width() const { return x1 - x0 + 1; }
  [[nodiscard]] std::uint32_t height() const { return y1 - y0 + 1; }
  [[nodiscard]] std::uint64_t size() const { return std::uint64_t{width()} * height(); }
  // "X,Y" for one PE, "X0,Y0:X1,Y1" otherwise.
  [[nodiscard]] std::string str() const;
};

enum class ByColor : std::uint8_t { Auto, On, Off };

struct TraceOptions {
  bool windows = false;                  // congestion windows (docs/trace.md)
  bool timeline = false;                 // Chrome trace-event JSON for Perfetto
  bool vcd = false;                      // router waveforms through sc_trace
  std::uint64_t window_cycles = 0;       // 0: chosen from the run's expected length
  std::uint32_t max_windows = 1000;      // beyond, windows merge in pairs (even, at least 2)
  std::uint32_t max_cells = 4096;        // regions per wafer; larger grids aggregate R x R routers
  std::optional<Rect> region;            // windows of this rectangle only (default: the whole grid)
  ByColor by_color = ByColor::Auto;      // per-color windows (auto: grids up to kAutoColorRouters)
  std::vector<Rect> pes;                 // PEs (routers) with timeline tracks and VCD probes
  std::string out;                       // folder (default: RUN_DIR/trace)
  std::uint64_t max_events = 1'000'000;  // timeline events kept (the rest are counted, not written)

  static constexpr std::uint64_t kAutoColorRouters = 16384;
  static constexpr std::uint64_t kMaxProbedRouters = 256;

  [[nodiscard]] bool any() const { return windows || timeline || vcd; }
};

// Parses a comma-separated list of windows, timeline, vcd, all, none into `o`.
// Throws sim::InputError naming `option` and the accepted words.
void parse_kinds(const std::string& text, TraceOptions& o, const std::string& option = "--trace");
// "X,Y" or "X0,Y0:X1,Y1" (corners in any order).
Rect parse_rect(const std::string& text, const std::string& option);
// Rectangles separated by ';' or spaces.
std::vector<Rect> parse_rects(const std::string& text, const std::string& option);
ByColor parse_by_color(const std::string& text, const std::string& option);
// Throws sim::InputError when `r` is not inside a width x height grid.
void check_inside(const Rect& r, std::uint32_t width, std::uint32_t height, const std::string& option);
// The routers probed when --trace vcd (or all) is given without --trace-pes: the router at the
// centre of a width x height grid, (width / 2, height / 2), and its eight neighbours, clipped
// to the grid (docs/trace.md).
Rect default_probe_rect(std::uint32_t width, std::uint32_t height);
// A window length for a run of about `expected_cycles`: 1, 2 or 5 x 10^k, giving at most 100
// windows (1000 when the length is not known: 0).
std::uint64_t auto_window_cycles(std::uint64_t expected_cycles);

}  // namespace wafersim::sim::trace

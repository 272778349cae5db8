#include "sim/app/trace_args.h"

#include "sim/app/choices.h"
#include "sim/errors.h"

namespace wafersim::app {

void TraceArgs::add(CLI::App& cmd) {
  cmd.add_option("--trace", kinds,
                 "record traces into the run folder (docs/trace.md): a list of windows (congestion windows: per "
                 "region, link direction and color, wavelets forwarded, stall cycles, queue occupancy; chunk-link "
                 "bytes), timeline (Chrome trace-event JSON for ui.perfetto.dev), vcd (router waveforms), all; "
                 "'wafersim report RUN_DIR' turns them into an HTML page")
      ->type_name("WHAT")
      ->group("Tracing");
  cmd.add_option("--trace-window", window, "window length in cycles (default: about 100 windows over the run)")
      ->type_name("CYCLES")
      ->group("Tracing");
  cmd.add_option("--trace-region", region, "congestion windows of this rectangle of routers only (default: all)")
      ->type_name("X0,Y0:X1,Y1")
      ->group("Tracing");
  cmd.add_option("--trace-pes", pes,
                 "PEs (routers) with their own waveforms (vcd, at most 256) and timeline tracks: X,Y or X0,Y0:X1,Y1, "
                 "several separated by ';' (vcd default: the centre router and its eight neighbours)")
      ->type_name("LIST")
      ->group("Tracing");
  cmd.add_option("--trace-cells", cells,
                 "at most this many regions per wafer: larger grids aggregate R x R routers per region (R reported)")
      ->capture_default_str()
      ->group("Tracing");
  cmd.add_option("--trace-colors", by_color,
                 "windows per color: on, off, or auto (per color up to 16384 routers traced)")
      ->check(one_of({"auto", "on", "off"}))
      ->capture_default_str()
      ->group("Tracing");
  max_windows_option =
      cmd.add_option("--trace-max-windows", max_windows,
                     "at most this many windows (even): a longer run doubles the window length and merges windows")
          ->capture_default_str()
          ->group("Tracing");
  cmd.add_option("--trace-max-events", max_events, "timeline events kept (the rest are counted in meta.json)")
      ->capture_default_str()
      ->group("Tracing");
  cmd.add_option("--trace-out", out, "folder for the trace files (default: RUN_DIR/trace)")
      ->type_name("DIR")
      ->group("Tracing");
}

sim::trace::TraceOptions TraceArgs::options() const {
  sim::trace::TraceOptions o;
  if (!kinds.empty()) sim::trace::parse_kinds(kinds, o);
  const bool other = window || !region.empty() || !pes.empty() || !out.empty();
  if (other && !o.any())
    throw sim::InputError("--trace-window, --trace-region, --trace-pes and --trace-out need --trace WHAT");
  o.window_cycles = window;
  o.max_windows = max_windows;
  o.max_cells = cells;
  o.max_events = max_events;
  if (!region.empty()) o.region = sim::trace::parse_rect(region, "--trace-region");
  if (!pes.empty()) o.pes = sim::trace::parse_rects(pes, "--trace-pes");
  o.by_color = sim::trace::parse_by_color(by_color, "--trace-colors");
  o.out = out;
  if (o.any() && (max_windows < 2 || max_windows % 2))
    throw sim::InputError("--trace-max-windows: expected an even number, at least 2");
  if (o.any() && cells == 0) throw sim::InputError("--trace-cells: expected at least 1");
  return o;
}

}  // namespace wafersim::app

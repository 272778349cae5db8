#pragma once
// Routes SystemC reports into wafersim's error channel: errors and fatals throw
// sim::SimulationError (exit code 3) instead of aborting; warnings are printed once.

namespace wafersim::sim {

void install_systemc_report_handler();

}  // namespace wafersim::sim

#pragma once
// SIGINT and SIGTERM during a run: the simulation stops at its next slice (run_loop.h) with
// sim::Interrupted, the run folder records it, and the process exits 130 or 143.

#include <string>

namespace wafersim::sim {

// Installs the handlers (once; later calls do nothing). The first signal sets a flag; a
// second one ends the process at once, as the signal would have without a handler.
void catch_interrupts();

// The signal received since catch_interrupts(), or 0.
int interrupt_signal();

// Throws sim::Interrupted naming the signal and `where` when one was received.
void throw_if_interrupted(const std::string& where);

}  // namespace wafersim::sim

// Test entry point: SystemC reports become test failures (via wafersim's error channel),
// and the SystemC banner stays out of gtest's output.

#include <gtest/gtest.h>
#include <systemc>

#include <cstdlib>

#include "sim/systemc_reports.h"

int sc_main(int argc, char* argv[]) {
  testing::InitGoogleTest(&argc, argv);
  wafersim::sim::install_systemc_report_handler();
  return RUN_ALL_TESTS();
}

int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}

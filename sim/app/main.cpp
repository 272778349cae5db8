// The `wafersim` executable: a thin shell around the command line in sim/app.

#include <systemc>

#include <cstdlib>

#include "sim/app/cli.h"
#include "sim/huge_pages.h"

int sc_main(int argc, char* argv[]) { return wafersim::app::run_cli(argc, argv); }

int main(int argc, char* argv[]) {
  wafersim::sim::reexec_with_huge_pages(argv);
  // SystemC prints its banner before sc_main unless told not to; keep stdout and stderr clean.
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}

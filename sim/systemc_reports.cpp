#include "sim/systemc_reports.h"

#include <systemc>

#include <iostream>

#include "sim/errors.h"

namespace wafersim::sim {
namespace {

void handler(const sc_core::sc_report& report, const sc_core::sc_actions& actions) {
  using namespace sc_core;
  switch (report.get_severity()) {
    case SC_INFO: return;
    case SC_WARNING:
      if (actions & SC_DISPLAY) std::cerr << "wafersim: SystemC warning: " << report.get_msg_type() << ": " << report.get_msg() << "\n";
      return;
    case SC_ERROR:
    case SC_FATAL:
    default:
      throw SimulationError(std::string("SystemC ") + (report.get_severity() == SC_FATAL ? "fatal" : "error") +
                            ": " + report.get_msg_type() + ": " + report.get_msg());
  }
}

}  // namespace

void install_systemc_report_handler() {
  sc_core::sc_report_handler::set_handler(&handler);
  sc_core::sc_report_handler::set_actions(sc_core::SC_ERROR, sc_core::SC_DISPLAY | sc_core::SC_THROW);
  sc_core::sc_report_handler::set_actions(sc_core::SC_FATAL, sc_core::SC_DISPLAY | sc_core::SC_THROW);
}

}  // namespace wafersim::sim

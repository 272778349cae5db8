#include "sim/interrupt.h"

#include <fmt/format.h>

#include <csignal>

#include "sim/errors.h"

namespace wafersim::sim {
namespace {

volatile std::sig_atomic_t received = 0;

extern "C" void on_signal(int signal) {
  if (received) {
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  received = signal;
}

}  // namespace

void catch_interrupts() {
  static const bool installed = [] {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    return true;
  }();
  (void)installed;
}

int interrupt_signal() { return received; }

void throw_if_interrupted(const std::string& where) {
  const int signal = received;
  if (!signal) return;
  throw sim::Interrupted(signal, fmt::format("interrupted by {} {}", signal == SIGINT ? "SIGINT" : "SIGTERM", where));
}

}  // namespace wafersim::sim

// A wafer's simulation in a process of its own (platforms/inference/wafer_process.h): its
// bytes come back, its errors keep their kind, and SIGTERM to the parent stops the child.

#include "platforms/inference/wafer_process.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "sim/errors.h"
#include "sim/interrupt.h"

namespace wafersim::platforms::inference::wafer_process_test {
namespace {

TEST(WaferProcess, TheChildsBytesAndErrorsComeBack) {
  Wire w = in_child([](Wire& out) {
    out.u64(42);
    out.str("wafer");
  });
  EXPECT_EQ(w.u64(), 42u);
  EXPECT_EQ(w.str(), "wafer");
  EXPECT_THROW(in_child([](Wire&) { throw sim::InputError("bad"); }), sim::InputError);
  EXPECT_THROW(in_child([](Wire&) { throw sim::SimulationError("stuck"); }), sim::SimulationError);
}

// SIGTERM delivered to the parent alone (as `kill PID` does) reaches the child, which stops
// at its next check as a simulation would; the parent reports the interrupt (exit 143).
TEST(WaferProcess, SigtermToTheParentStopsTheChild) {
  sim::catch_interrupts();
  std::thread signaller([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(::getpid(), SIGTERM);
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    in_child([](Wire&) {
      for (int i = 0; i < 3000; ++i) {  // a simulation of 30 s, unless interrupted
        sim::throw_if_interrupted("in the test's loop");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
    ADD_FAILURE() << "the child ran to its end";
  } catch (const sim::Interrupted& e) {
    EXPECT_EQ(static_cast<int>(e.exit_code()), 128 + SIGTERM);
  }
  signaller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace wafersim::platforms::inference::wafer_process_test

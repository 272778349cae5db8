// A wafer's simulation in a process of its own (platforms/inference/wafer_process.h): its
// bytes come back, its errors keep their kind, and SIGTERM to the parent stops the child.

#include "platforms/inference/wafer_process.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <ctime>
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
// The signal comes from a POSIX timer rather than a thread: a fork while a new thread is still
// starting can leave the sanitizers' allocator locked in the child.
TEST(WaferProcess, SigtermToTheParentStopsTheChild) {
  sim::catch_interrupts();
  sigevent event{};
  event.sigev_notify = SIGEV_SIGNAL;
  event.sigev_signo = SIGTERM;
  timer_t timer{};
  ASSERT_EQ(::timer_create(CLOCK_MONOTONIC, &event, &timer), 0);
  itimerspec after{};
  after.it_value.tv_nsec = 300'000'000;
  ASSERT_EQ(::timer_settime(timer, 0, &after, nullptr), 0);
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
  ::timer_delete(timer);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace wafersim::platforms::inference::wafer_process_test

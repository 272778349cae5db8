#pragma once
// Work that needs a SystemC kernel of its own (a simulated wafer elaborates once per process)
// run in a forked child, its result handed back through a pipe.

#include <functional>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace wafersim::sim {

// Contract: forks; the child runs `work` and writes its result (any bytes) or the error it
// threw to the parent, then exits without returning. The parent waits for it and returns the
// result, or rethrows the child's error as the same type (sim::InputError, SimulationError,
// LimitReached, Interrupted, another sim::Error with its exit code; std::runtime_error
// otherwise) with its message. SIGINT or SIGTERM caught by the parent (catch_interrupts) is
// passed on to the child, and the parent then throws sim::Interrupted. `what` names the work
// in the error of a child that ends without a result or by a signal.
std::string run_in_child_text(const std::function<std::string()>& work, const std::string& what);

// The same for work whose result is JSON (nlohmann::json or ordered_json: keys keep their order).
template <class Work>
auto run_in_child(Work&& work, const std::string& what) {
  using Json = std::decay_t<std::invoke_result_t<Work&>>;
  return Json::parse(run_in_child_text([&] { return work().dump(); }, what));
}

}  // namespace wafersim::sim

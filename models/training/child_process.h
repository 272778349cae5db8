#pragma once
// Work that needs a SystemC kernel of its own (a simulated wafer elaborates once per process)
// run in a forked child, its result handed back as JSON through a pipe.

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace wafersim::models::training {

// Contract: forks; the child runs `work` and writes its JSON result (or the error it threw)
// to the parent, then exits without returning. The parent waits for it and returns the result,
// or rethrows the child's error as the same type (sim::InputError, SimulationError,
// LimitReached; std::runtime_error otherwise) with its message. `what` names the work in the
// error of a child that ends without a result.
nlohmann::json run_in_child(const std::function<nlohmann::json()>& work, const std::string& what);

}  // namespace wafersim::models::training

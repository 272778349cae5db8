#include "sim/app/on_ranks.h"

#include <fmt/format.h>

#include <exception>
#include <iostream>

#include "sim/errors.h"

namespace wafersim::app {

void on_ranks(sim::parallel::Transport& ranks, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    const auto* error = dynamic_cast<const sim::Error*>(&e);
    std::cerr << fmt::format("wafersim: rank {} of {}: error: {}\n", ranks.rank(), ranks.ranks(), e.what());
    std::cerr.flush();
    ranks.abort(error ? error->exit_code() : sim::kExitInternal);
    throw;
  }
}

}  // namespace wafersim::app

#pragma once
// A command's work on one of several MPI ranks (docs/parallel.md).

#include <functional>

#include "sim/parallel/transport.h"

namespace wafersim::app {

// Runs `body` on this rank. An error is reported with the rank ("wafersim: rank R of K: error:
// ...") and ends every rank with its exit code, since the others may wait for a message from
// this one; the error is then rethrown (with one rank, abort returns).
void on_ranks(sim::parallel::Transport& ranks, const std::function<void()>& body);

}  // namespace wafersim::app

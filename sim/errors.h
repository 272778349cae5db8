#pragma once
// The error channel: every failure a user can reach is one of these, each with its exit code.

#include <stdexcept>
#include <string>

namespace wafersim::sim {

enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,    // a bug in wafersim
  kExitBadInput = 2,    // configuration, model, program or command-line error
  kExitSimulation = 3,  // the simulated machine failed (deadlock, SRAM overflow, ...), or the run
                        // could not finish on this host (out of memory, an output not written)
  kExitLimit = 4,       // --max-cycles or --max-wall reached
};

// Base of all wafersim errors; what() holds the whole, formatted message.
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  [[nodiscard]] ExitCode exit_code() const { return code_; }

 private:
  ExitCode code_;
};

// Bad user input (exit code 2).
class InputError : public Error {
 public:
  explicit InputError(const std::string& message) : Error(kExitBadInput, message) {}
};

// The simulated machine cannot continue (exit code 3).
class SimulationError : public Error {
 public:
  explicit SimulationError(const std::string& message) : Error(kExitSimulation, message) {}
};

// An output file could not be written (disk full, permissions, ...): exit code 3, like any
// run that could not finish; bad input is code 2.
class OutputError : public Error {
 public:
  explicit OutputError(const std::string& message) : Error(kExitSimulation, message) {}
};

// A run limit stopped the simulation (exit code 4).
class LimitReached : public Error {
 public:
  explicit LimitReached(const std::string& message) : Error(kExitLimit, message) {}
};

// SIGINT or SIGTERM stopped the run: exit code 128 + the signal (130, 143), as a shell reports
// a process the signal ended.
class Interrupted : public Error {
 public:
  Interrupted(int signal, const std::string& message) : Error(static_cast<ExitCode>(128 + signal), message) {}
};

}  // namespace wafersim::sim

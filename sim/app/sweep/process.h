#pragma once
// Child processes for sweeps: start one with its output redirected, poll or wait for it,
// stop it and everything it started.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace wafersim::app::sweep {

struct SpawnOptions {
  std::string stdout_path;      // empty: inherit
  std::string stderr_path;      // empty: inherit
  bool append = false;          // append to the files instead of truncating them
  bool own_group = false;       // lead a new process group (so a timeout can stop all of it)
  bool die_with_parent = true;  // SIGKILL the child when this process dies, however it dies
};

// How a child ended: `code` is its exit code, or 128 + signal when a signal ended it.
struct ExitStatus {
  int code = 0;
  int signal = 0;
};

// Contract: starts argv[0] (searched in PATH when it has no '/') with `argv`; throws
// sim::Error when the process cannot be created. A program that cannot be executed exits
// with code 127 after printing why on its stderr.
pid_t spawn(const std::vector<std::string>& argv, const SpawnOptions& options);

// The exit status if the child has ended (reaping it), else nothing.
std::optional<ExitStatus> try_wait(pid_t pid);
// Waits for the child to end.
ExitStatus wait_for(pid_t pid);
// Sends `signal` to the child's process group when it leads one, else to the child.
void signal_child(pid_t pid, int signal, bool group);

// Runs a command to completion and captures its output (for sbatch, squeue).
struct CommandResult {
  ExitStatus exit;
  std::string out, err;
};
CommandResult run_command(const std::vector<std::string>& argv);

// The absolute path of the running executable (/proc/self/exe).
std::string self_executable();

}  // namespace wafersim::app::sweep

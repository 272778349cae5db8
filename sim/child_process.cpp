#include "sim/child_process.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "sim/errors.h"
#include "sim/interrupt.h"

namespace wafersim::sim {
namespace {

void write_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// The child: runs `work` and sends 'K' and its result, or 'E', the error's exit code (4 bytes)
// and its message; then ends without running the parent's destructors.
[[noreturn]] void child(int fd, const std::function<std::string()>& work) {
  std::string reply;
  const auto error = [&](std::int32_t code, const char* message) {
    reply = "E";
    reply.append(reinterpret_cast<const char*>(&code), sizeof code);
    reply += message;
  };
  try {
    reply = "K" + work();
  } catch (const sim::Error& e) {
    error(static_cast<std::int32_t>(e.exit_code()), e.what());
  } catch (const std::exception& e) {
    error(sim::kExitInternal, e.what());
  }
  std::cerr.flush();
  std::fflush(nullptr);
  write_all(fd, reply);
  ::close(fd);
  ::_exit(0);
}

// Everything the child writes to `fd`. SIGINT or SIGTERM caught by this process meanwhile
// (sim::catch_interrupts) is passed on to the child once, so it stops as a run does.
std::string read_all(int fd, pid_t pid) {
  std::string bytes;
  char buf[1 << 16];
  bool forwarded = false;
  for (;;) {
    if (!forwarded && interrupt_signal()) {
      ::kill(pid, interrupt_signal());
      forwarded = true;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;  // nothing yet, or a signal (poll is not restarted)
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return bytes;
    bytes.append(buf, static_cast<std::size_t>(n));
  }
}

const char* signal_name(int signal) { return signal == SIGINT ? "SIGINT" : "SIGTERM"; }

[[noreturn]] void rethrow(std::int32_t code, const std::string& message) {
  switch (code) {
    case sim::kExitBadInput:
      throw sim::InputError(message);
    case sim::kExitSimulation:
      throw sim::SimulationError(message);
    case sim::kExitLimit:
      throw sim::LimitReached(message);
    case sim::kExitInternal:
      throw std::runtime_error(message);
    case 128 + SIGINT:
      throw sim::Interrupted(SIGINT, message);
    case 128 + SIGTERM:
      throw sim::Interrupted(SIGTERM, message);
    default:
      throw sim::Error(static_cast<sim::ExitCode>(code), message);
  }
}

}  // namespace

std::string run_in_child_text(const std::function<std::string()>& work, const std::string& what) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child(fds[1], work);
  }
  ::close(fds[1]);
  std::string reply = read_all(fds[0], pid);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Interrupted here: the child stopped by it (or by a second signal of a process group's).
  if (const int signal = interrupt_signal(); signal && (reply.empty() || reply[0] != 'K'))
    throw sim::Interrupted(signal, fmt::format("interrupted by {} while {} ran", signal_name(signal), what));
  if (WIFSIGNALED(status))
    throw sim::SimulationError(fmt::format("{} ended by signal {} ({})", what, WTERMSIG(status),
                                           WTERMSIG(status) == SIGKILL ? "killed, out of memory?" : "see above"));
  std::int32_t code = 0;
  if (reply.empty() || (reply[0] == 'E' && reply.size() < 1 + sizeof code) || !WIFEXITED(status))
    throw sim::SimulationError(fmt::format("{} ended without a result (status {})", what, status));
  if (reply[0] == 'E') {
    std::memcpy(&code, reply.data() + 1, sizeof code);
    rethrow(code, reply.substr(1 + sizeof code));
  }
  return reply.substr(1);
}

}  // namespace wafersim::sim

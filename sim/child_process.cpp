#include "sim/child_process.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "sim/errors.h"

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

}  // namespace

std::string run_in_child_text(const std::function<std::string()>& work, const std::string& what) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    nlohmann::json reply;
    try {
      reply["result"] = work();
    } catch (const sim::Error& e) {
      reply = {{"error", e.what()}, {"code", static_cast<int>(e.exit_code())}};
    } catch (const std::exception& e) {
      reply = {{"error", e.what()}, {"code", 1}};
    }
    write_all(fds[1], reply.dump());
    ::close(fds[1]);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (text.empty() || !WIFEXITED(status))
    throw sim::SimulationError(fmt::format("{} ended without a result (status {})", what, status));
  auto reply = nlohmann::json::parse(text);
  if (reply.contains("error")) {
    const std::string msg = reply["error"].get<std::string>();
    switch (reply["code"].get<int>()) {
      case sim::kExitBadInput:
        throw sim::InputError(msg);
      case sim::kExitSimulation:
        throw sim::SimulationError(msg);
      case sim::kExitLimit:
        throw sim::LimitReached(msg);
      case sim::kExitInternal:
        throw std::runtime_error(msg);
      default:
        throw sim::Error(static_cast<sim::ExitCode>(reply["code"].get<int>()), msg);
    }
  }
  return reply["result"].get<std::string>();
}

}  // namespace wafersim::sim

#include "sim/app/sweep/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "sim/errors.h"

namespace wafersim::app::sweep {

namespace {

[[noreturn]] void child_fail(const char* what, const std::string& arg) {
  std::string msg = fmt::format("wafersim: cannot {} '{}': {}\n", what, arg, std::strerror(errno));
  ssize_t ignored = ::write(STDERR_FILENO, msg.data(), msg.size());
  (void)ignored;
  ::_exit(127);
}

void redirect(const std::string& path, int fd, bool append) {
  if (path.empty()) return;
  int f = ::open(path.c_str(), O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC) | O_CLOEXEC, 0644);
  if (f < 0) child_fail("open", path);
  if (::dup2(f, fd) < 0) child_fail("redirect to", path);
  ::close(f);
}

ExitStatus decode(int status) {
  ExitStatus s;
  if (WIFEXITED(status)) {
    s.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    s.signal = WTERMSIG(status);
    s.code = 128 + s.signal;
  }
  return s;
}

}  // namespace

pid_t spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) throw sim::Error(sim::kExitInternal, "spawn: empty command line");
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw sim::Error(sim::kExitInternal, fmt::format("cannot start a process: {}", std::strerror(errno)));
  if (pid == 0) {
    if (options.die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
    }
    if (options.own_group) ::setpgid(0, 0);
    // Signals the parent ignores or blocks stay ignored across exec; the child starts clean.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    redirect(options.stdout_path, STDOUT_FILENO, options.append);
    redirect(options.stderr_path, STDERR_FILENO, options.append);
    ::execvp(cargv[0], cargv.data());
    child_fail("run", argv[0]);
  }
  if (options.own_group) ::setpgid(pid, pid);  // also from the parent: no race with an early kill
  return pid;
}

std::optional<ExitStatus> try_wait(pid_t pid) {
  int status = 0;
  pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r == 0) return std::nullopt;
  if (r < 0) {
    if (errno == EINTR) return std::nullopt;
    throw sim::Error(sim::kExitInternal, fmt::format("waitpid({}): {}", pid, std::strerror(errno)));
  }
  return decode(status);
}

ExitStatus wait_for(pid_t pid) {
  int status = 0;
  for (;;) {
    if (::waitpid(pid, &status, 0) >= 0) return decode(status);
    if (errno != EINTR) throw sim::Error(sim::kExitInternal, fmt::format("waitpid({}): {}", pid, std::strerror(errno)));
  }
}

void signal_child(pid_t pid, int signal, bool group) {
  if (group)
    ::kill(-pid, signal);
  else
    ::kill(pid, signal);
}

CommandResult run_command(const std::vector<std::string>& argv) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)
    throw sim::Error(sim::kExitInternal, fmt::format("pipe: {}", std::strerror(errno)));
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) throw sim::Error(sim::kExitInternal, fmt::format("cannot start a process: {}", std::strerror(errno)));
  if (pid == 0) {
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::execvp(cargv[0], cargv.data());
    child_fail("run", argv[0]);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  CommandResult r;
  struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  r.exit = wait_for(pid);
  return r;
}

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw sim::Error(sim::kExitInternal, fmt::format("cannot find the wafersim executable: {}", ec.message()));
  return p.string();
}

}  // namespace wafersim::app::sweep

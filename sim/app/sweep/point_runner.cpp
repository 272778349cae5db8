#include "sim/app/sweep/point_runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <thread>

#include "sim/app/run_dir.h"
#include "sim/app/sweep/metrics.h"
#include "sim/app/sweep/process.h"
#include "sim/errors.h"

namespace wafersim::app::sweep {
namespace fs = std::filesystem;

namespace {

// The workload's process group, for the termination handler below. A signal handler can
// reach nothing else, so this one file-local variable is the exception to "no globals".
volatile sig_atomic_t g_child_group = 0;

extern "C" void stop_child_and_die(int sig) {
  if (g_child_group > 0) ::kill(-static_cast<pid_t>(g_child_group), SIGKILL);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Installs handlers so that SIGTERM, SIGINT and SIGHUP (scancel, GNU parallel's --timeout,
// Ctrl-C) take the workload and anything it started down with this process.
class ChildGuard {
 public:
  explicit ChildGuard(pid_t group) {
    g_child_group = group;
    struct sigaction sa {};
    sa.sa_handler = stop_child_and_die;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~ChildGuard() {
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
    g_child_group = 0;
  }
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;

 private:
  static constexpr int kSignals[3] = {SIGTERM, SIGINT, SIGHUP};
  struct sigaction old_[3]{};
};

// Holds the point's run lock (an fcntl lock: released by the kernel when the process dies).
class PointLock {
 public:
  explicit PointLock(const fs::path& dir) {
    fd_ = ::open((dir / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw sim::InputError(fmt::format("cannot create {}: {}", (dir / ".lock").string(), std::strerror(errno)));
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    locked_ = ::fcntl(fd_, F_SETLK, &fl) == 0;
  }
  ~PointLock() { ::close(fd_); }
  PointLock(const PointLock&) = delete;
  PointLock& operator=(const PointLock&) = delete;
  [[nodiscard]] bool locked() const { return locked_; }

 private:
  int fd_ = -1;
  bool locked_ = false;
};

std::string now_iso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string read_marker(const fs::path& p) {
  std::ifstream in(p);
  std::string word;
  in >> word;
  return word;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`*?[]{}()<>|&;#~!") == std::string::npos;
    std::string q = plain ? a : "'" + [&] {
      std::string s;
      for (char c : a) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
      return s;
    }() + "'";
    out += (out.empty() ? "" : " ") + q;
  }
  return out;
}

}  // namespace

std::string tail_of_file(const std::string& path, std::size_t max_lines, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const std::streamoff size = in.tellg();
  const std::streamoff start = std::max<std::streamoff>(0, size - static_cast<std::streamoff>(max_bytes));
  in.seekg(start);
  std::string text(static_cast<std::size_t>(size - start), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (start > 0) {  // began inside a line: drop that part line
    auto nl = text.find('\n');
    if (nl != std::string::npos && nl + 1 < text.size()) text.erase(0, nl + 1);
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  std::size_t pos = text.size();
  for (std::size_t lines = 0; lines < max_lines; ++lines) {
    pos = pos == 0 ? std::string::npos : text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
  }
  return text.substr(pos + 1);
}

PointOutcome run_point(const Plan& plan, const SweepDir& dir, std::size_t index, const PointOptions& options) {
  const PlannedPoint& point = plan.points().at(index);
  const fs::path pdir = dir.point(index);
  std::error_code ec;
  fs::create_directories(pdir, ec);
  if (ec) throw sim::InputError(fmt::format("cannot create {}: {}", pdir.string(), ec.message()));

  PointOutcome out;
  PointLock lock(pdir);
  if (!lock.locked()) {
    out.busy = true;
    return out;
  }
  if (fs::exists(pdir / "done")) {
    std::string status = read_marker(pdir / "done");
    if (!options.force && !(options.retry_failed && status != kStatusOk)) {
      out.status = status;
      return out;
    }
  }
  // Start from a clean folder: the marker first, so that nothing left looks finished.
  fs::remove(pdir / "done", ec);
  for (const auto& entry : fs::directory_iterator(pdir, ec))
    if (entry.path().filename() != ".lock") fs::remove_all(entry.path(), ec);

  std::vector<std::string> argv = plan.spec().wrapper;
  argv.push_back(self_executable());
  argv.insert(argv.end(), point.args.begin(), point.args.end());
  // --force: the folder already holds the sweep's own files (the lock, point.json, the logs).
  argv.insert(argv.end(), {"--out", pdir.string(), "--force"});

  const std::string started = now_iso();
  nlohmann::ordered_json info;
  info["format"] = "wafersim-point/1";
  info["sweep"] = plan.spec().name;
  info["index"] = index;
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  for (const auto& [k, v] : point.params) params[k] = v;
  info["params"] = params;
  info["command_line"] = shell_join(argv);
  info["host"] = host_name();
  info["started"] = started;
  write_file_atomic(pdir / "point.json", info.dump(2) + "\n");

  SpawnOptions so;
  so.stdout_path = (pdir / "stdout.txt").string();
  so.stderr_path = (pdir / "stderr.txt").string();
  so.own_group = true;
  so.die_with_parent = true;
  const double timeout = plan.spec().timeout_seconds;
  const auto t0 = std::chrono::steady_clock::now();
  ExitStatus exit;
  bool timed_out = false;
  {
    pid_t pid = spawn(argv, so);
    ChildGuard guard(pid);
    auto sleep = std::chrono::milliseconds(1);
    for (;;) {
      if (auto s = try_wait(pid)) {
        exit = *s;
        break;
      }
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (timeout > 0 && elapsed >= timeout) {
        timed_out = true;
        // Ask politely, then insist: the whole process group, so nothing is left behind.
        signal_child(pid, SIGTERM, true);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        std::optional<ExitStatus> s;
        while (!(s = try_wait(pid)) && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (!s) {
          signal_child(pid, SIGKILL, true);
          s = wait_for(pid);
        }
        signal_child(pid, SIGKILL, true);  // stragglers of the group
        exit = *s;
        break;
      }
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, std::chrono::milliseconds(20));
    }
  }
  out.ran = true;
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.exit_code = exit.code;
  out.status = timed_out ? "timeout" : exit.signal ? "crashed" : exit.code ? "failed" : kStatusOk;

  std::vector<std::pair<std::string, std::string>> metric_paths;
  for (const auto& m : plan.spec().metrics) metric_paths.emplace_back(m.name, m.path);
  MetricValues metrics = read_metrics(pdir, metric_paths);

  nlohmann::ordered_json st;
  st["format"] = "wafersim-point-status/1";
  st["index"] = index;
  st["status"] = out.status;
  st["exit_code"] = exit.code;
  st["signal"] = exit.signal ? nlohmann::ordered_json(exit.signal) : nlohmann::ordered_json(nullptr);
  st["timed_out"] = timed_out;
  st["timeout_seconds"] = timeout;
  st["wall_seconds"] = out.wall_seconds;
  st["host"] = info["host"];
  st["started"] = started;
  st["finished"] = now_iso();
  st["params"] = params;
  st["metrics"] = metrics.values;
  st["missing_metrics"] = metrics.missing;
  st["stderr_tail"] = tail_of_file(so.stderr_path);
  write_file_atomic(pdir / "status.json", st.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  write_file_atomic(pdir / "done", out.status + "\n");
  return out;
}

}  // namespace wafersim::app::sweep

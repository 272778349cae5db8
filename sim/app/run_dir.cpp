#include "sim/app/run_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "sim/app/created_dirs.h"
#include "sim/config/input_file.h"
#include "sim/errors.h"
#include "sim/interrupt.h"
#include "sim/run_id.h"

namespace wafersim::app {
namespace fs = std::filesystem;

namespace {

fs::path& current_run() {
  static fs::path path;
  return path;
}

bool is_trace_file(const std::string& name) {
  static const std::vector<std::string> exact{"meta.json", "timeline.json", "routers.vcd", "steps.json", "phases.json"};
  if (std::find(exact.begin(), exact.end(), name) != exact.end()) return true;
  return name.size() > 4 && name.compare(name.size() - 4, 4, ".csv") == 0;
}

bool is_temporary(const std::string& name) { return name.find(".tmp.") != std::string::npos; }

void remove_if_empty(const fs::path& p) {
  std::error_code ec;
  if (fs::is_directory(p, ec) && fs::is_empty(p, ec)) fs::remove(p, ec);
}

// Removes what a wafersim run wrote into `dir`, nothing else.
void clear_run_files(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> files, runs;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const auto& own = run_output_names();
    if (e.is_regular_file(ec) && (std::find(own.begin(), own.end(), name) != own.end() || is_temporary(name)))
      files.push_back(e.path());
    else if (e.is_directory(ec) && (name == "trace" || name.rfind("rate-", 0) == 0))
      runs.push_back(e.path());
  }
  // The input copies of an exact rerun (rerun.h), only where a rerun.json says they are ours.
  if (fs::is_regular_file(dir / "rerun.json", ec) && fs::is_directory(dir / "inputs", ec)) {
    fs::remove_all(dir / "inputs", ec);
    if (ec)
      throw sim::OutputError(fmt::format("--force: cannot remove {}: {}", (dir / "inputs").string(), ec.message()));
  }
  for (const auto& f : files)
    if (!fs::remove(f, ec) && ec)
      throw sim::OutputError(fmt::format("--force: cannot remove {}: {}", f.string(), ec.message()));
  for (const auto& r : runs) {
    if (r.filename() == "trace") {
      for (const auto& e : fs::directory_iterator(r, ec))
        if (e.is_regular_file(ec) &&
            (is_trace_file(e.path().filename().string()) || is_temporary(e.path().filename().string())))
          fs::remove(e.path(), ec);
    } else {
      clear_run_files(r);
    }
    remove_if_empty(r);
  }
}

std::string listing(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < 3; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 3) out += fmt::format(" and {} more", names.size() - 3);
  return out;
}

[[noreturn]] void write_failed(const fs::path& path, int error) {
  throw sim::OutputError(fmt::format("cannot write {}: {}", path.string(), std::strerror(error)));
}

// Writes all of `content` to the open descriptor; returns 0 or the errno of the failure.
int write_all(int fd, const std::string& content) {
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace

const std::vector<std::string>& run_output_names() {
  static const std::vector<std::string> names{"run.json",      "stats.json",    "stats.txt",  "config.yaml",
                                              "training.json", "pipeline.json", "model.json", "curve.csv",
                                              "report.html",   "traffic.json",  "rerun.json", "mesh.json"};
  return names;
}

RunDir RunDir::create(const std::string& requested, const std::string& command, bool force) {
  sim::catch_interrupts();
  RunDir dir = make(requested, command, force);
  current_run() = dir.path();
  return dir;
}

RunDir RunDir::make(const std::string& requested, const std::string& command, bool force) {
  std::error_code ec;
  if (!requested.empty()) {
    fs::path p(requested);
    const bool existed = fs::exists(p, ec);
    if (fs::is_directory(p, ec) && !fs::is_empty(p, ec)) {
      if (!force)
        throw sim::InputError(fmt::format(
            "--out {}: the folder is not empty (it holds {}); give --force to replace the files of an earlier run "
            "(other files are kept), or name a new folder",
            requested, listing(p)));
      clear_run_files(p);
    }
    fs::create_directories(p, ec);
    if (!existed && !ec) note_created_dir(p);
    if (ec || !fs::is_directory(p))
      throw sim::InputError(fmt::format("--out {}: cannot create the output folder: {}", requested,
                                        ec ? ec.message() : "exists and is not a folder"));
    return RunDir(p);
  }
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  fs::path base = fs::path("wafersim-out") / fmt::format("{}-{}", command, stamp);
  fs::create_directories(base.parent_path(), ec);
  for (int n = 0; n < 10000; ++n) {
    fs::path p = n == 0 ? base : fs::path(base.string() + fmt::format("-{}", n));
    if (fs::create_directory(p, ec)) {
      note_created_dir(p);
      return RunDir(p);
    }
  }
  throw sim::InputError(fmt::format("cannot create an output folder under {}", base.parent_path().string()));
}

void write_file_atomic(const fs::path& path, const std::string& content) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) throw sim::OutputError(fmt::format("cannot write {}: it is a folder", path.string()));
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) write_failed(path, errno);
    const int error = write_all(fd, content);
    if (::close(fd) != 0 && error == 0) write_failed(path, errno);
    if (error) write_failed(path, error);
    return;
  }
  fs::path tmp = path;
  tmp += fmt::format(".tmp.{}", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) write_failed(path, errno);
  int error = write_all(fd, content);
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) error = errno;
  if (error) {
    ::unlink(tmp.c_str());
    write_failed(path, error);
  }
}

void record_run_status(const std::string& command_line, const std::string& status) {
  if (current_run().empty()) return;
  try {
    const fs::path file = current_run() / "run.json";
    nlohmann::ordered_json meta;
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) {
      try {
        meta = nlohmann::ordered_json::parse(
            sim::config::read_input_file(file.string(), "run.json", sim::config::kMaxJsonBytes));
      } catch (const std::exception&) {
        meta = nlohmann::ordered_json::object();
      }
    }
    if (!meta.is_object() || meta.empty()) {
      meta = nlohmann::ordered_json::object();
      meta["format"] = "wafersim-run/1";
      meta["run_id"] = sim::run_id();
      meta["command_line"] = command_line;
    }
    meta["status"] = status;
    write_file_atomic(file, meta.dump(2) + "\n");
  } catch (const std::exception&) {
    // The run already failed; its own error is the one to report.
  }
}

void RunDir::write(const std::string& name, const std::string& content) const {
  write_file_atomic(path_ / name, content);
}

}  // namespace wafersim::app

#pragma once
// A run's output folder: resolved config, statistics, metadata and traces. A folder holds one
// run: a run never writes over another run's files unless told to (--force).

#include <filesystem>
#include <string>
#include <vector>

namespace wafersim::app {

class RunDir {
 public:
  // Uses `requested` when given (created if missing); otherwise a new folder
  // wafersim-out/<command>-YYYYmmdd-HHMMSS[-N] under the current directory.
  // A requested folder that is not empty is refused (sim::InputError naming what it holds)
  // unless `force`, which first removes the files wafersim writes into a run folder
  // (run_output_names(), the trace/ files and the rate-* runs of a traffic sweep) and leaves
  // every other file alone.
  static RunDir create(const std::string& requested, const std::string& command, bool force = false);

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  // Writes a file atomically (temporary file, then rename), so a reader never sees half of it.
  void write(const std::string& name, const std::string& content) const;

 private:
  explicit RunDir(std::filesystem::path p) : path_(std::move(p)) {}
  static RunDir make(const std::string& requested, const std::string& command, bool force);
  std::filesystem::path path_;
};

// Records in the folder of the last RunDir::create() of this process that the run ended with
// `status` (e.g. "interrupted by SIGINT at cycle 1200"): updates its run.json, or writes a
// minimal one (format, run id, command line, status) when the run had not written it yet.
// Does nothing when no folder was created; never throws.
void record_run_status(const std::string& command_line, const std::string& status);

// The names of the files a command writes at the top of a run folder.
const std::vector<std::string>& run_output_names();

// Writes `content` to `path` atomically: a temporary file beside it, then a rename. A path that
// exists and is not a regular file (a device such as /dev/stdout, a FIFO) is written in place.
// Throws sim::OutputError (exit code 3) naming the file and the system's reason on any failure,
// and leaves no temporary file behind.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

}  // namespace wafersim::app

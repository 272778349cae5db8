#pragma once
// A run's output folder: resolved config, statistics, metadata and traces.

#include <filesystem>
#include <string>

namespace wafersim::app {

class RunDir {
 public:
  // Uses `requested` when given (created if missing); otherwise a new folder
  // wafersim-out/<command>-YYYYmmdd-HHMMSS[-N] under the current directory.
  static RunDir create(const std::string& requested, const std::string& command);

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  // Writes a file atomically (temporary file, then rename), so a reader never sees half of it.
  void write(const std::string& name, const std::string& content) const;

 private:
  explicit RunDir(std::filesystem::path p) : path_(std::move(p)) {}
  std::filesystem::path path_;
};

// Writes `content` to `path` atomically.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

}  // namespace wafersim::app

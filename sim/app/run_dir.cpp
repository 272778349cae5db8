#include "sim/app/run_dir.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>

#include "sim/app/created_dirs.h"
#include "sim/errors.h"

namespace wafersim::app {
namespace fs = std::filesystem;

RunDir RunDir::create(const std::string& requested, const std::string& command) {
  std::error_code ec;
  if (!requested.empty()) {
    fs::path p(requested);
    const bool existed = fs::exists(p, ec);
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
  fs::path tmp = path;
  tmp += fmt::format(".tmp.{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) throw sim::InputError(fmt::format("cannot write {}: {}", tmp.string(), std::strerror(errno)));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw sim::InputError(fmt::format("cannot write {}: {}", path.string(), ec.message()));
}

void RunDir::write(const std::string& name, const std::string& content) const {
  write_file_atomic(path_ / name, content);
}

}  // namespace wafersim::app

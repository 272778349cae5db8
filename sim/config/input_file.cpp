#include "sim/config/input_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sim/config/diagnostics.h"

namespace wafersim::sim::config {
namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string size_text(std::uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

[[noreturn]] void fail(const std::string& path, const std::string& what, const std::string& why) {
  throw ConfigError(Diagnostic{Location{path, 0, 0}, {}, fmt::format("cannot read {}: {}", what, why)});
}

void check_size(const std::string& path, const std::string& what, std::uint64_t size, std::uint64_t max_bytes) {
  if (size > max_bytes)
    fail(path, what,
         fmt::format("{} is larger than the limit of {} for this kind of file", size_text(size), size_text(max_bytes)));
}

}  // namespace

std::string unreadable_reason(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno == ENOENT ? "no such file" : std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return fmt::format("not a readable file ({})", kind_of(st.st_mode));
  if (::access(path.c_str(), R_OK) != 0) return fmt::format("not a readable file ({})", std::strerror(errno));
  return {};
}

void check_input_file(const std::string& path, const std::string& what, std::uint64_t max_bytes) {
  const std::string why = unreadable_reason(path);
  if (!why.empty()) fail(path, what, why);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) check_size(path, what, static_cast<std::uint64_t>(st.st_size), max_bytes);
}

std::string read_input_file(const std::string& path, const std::string& what, std::uint64_t max_bytes) {
  const std::string why = unreadable_reason(path);
  if (!why.empty()) fail(path, what, why);
  // O_NONBLOCK: should the path have become a FIFO since the check, opening it does not wait.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(path, what, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, what, fmt::format("not a readable file ({})", kind_of(st.st_mode)));
  }
  std::string text;
  try {
    check_size(path, what, static_cast<std::uint64_t>(st.st_size), max_bytes);
    text.reserve(static_cast<std::size_t>(st.st_size));
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail(path, what, std::strerror(errno));
      if (n == 0) break;
      text.append(buf, static_cast<std::size_t>(n));
      check_size(path, what, text.size(), max_bytes);  // a file that grows while read
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return text;
}

}  // namespace wafersim::sim::config

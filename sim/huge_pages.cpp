#include "sim/huge_pages.h"

#include <cstdlib>
#include <fstream>
#include <string>

#if defined(__linux__)
#include <unistd.h>
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define WAFERSIM_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WAFERSIM_SANITIZED 1
#endif

namespace wafersim::sim {
namespace {

constexpr const char* kTunable = "glibc.malloc.hugetlb";

// The bracketed choice in /sys/kernel/mm/transparent_hugepage/enabled, or "" when unreadable.
std::string kernel_thp_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(in, line)) return {};
  const auto open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return {};
  return line.substr(open + 1, close - open - 1);
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool under_valgrind() { return env("LD_PRELOAD").find("vgpreload") != std::string::npos; }

// The tunable's value in GLIBC_TUNABLES ("" when absent).
std::string tunable_value() {
  const std::string all = env("GLIBC_TUNABLES");
  const std::string key = std::string(kTunable) + "=";
  std::size_t at = 0;
  while ((at = all.find(key, at)) != std::string::npos) {
    if (at == 0 || all[at - 1] == ':') {
      const std::size_t from = at + key.size();
      return all.substr(from, all.find(':', from) - from);
    }
    at += key.size();
  }
  return {};
}

}  // namespace

bool malloc_huge_pages_buildable() {
#if defined(__linux__) && defined(__GLIBC__) && !defined(WAFERSIM_SANITIZED)
  return true;
#else
  return false;
#endif
}

void reexec_with_huge_pages(char* argv[]) {
#if defined(__linux__) && defined(__GLIBC__)
  if (!malloc_huge_pages_buildable() || env("WAFERSIM_HUGE_PAGES") == "0" || !tunable_value().empty() ||
      under_valgrind())
    return;
  if (kernel_thp_mode() != "madvise") return;
  const char* given = std::getenv("GLIBC_TUNABLES");
  const std::string before = given ? given : "";
  const std::string with = (before.empty() ? "" : before + ":") + kTunable + "=1";
  if (::setenv("GLIBC_TUNABLES", with.c_str(), 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  // exec failed (no /proc, say): go on as started.
  if (given)
    ::setenv("GLIBC_TUNABLES", before.c_str(), 1);
  else
    ::unsetenv("GLIBC_TUNABLES");
#else
  (void)argv;
#endif
}

std::string heap_huge_pages() {
  const std::string mode = kernel_thp_mode();
  if (mode == "always") return "always";
  const std::string v = tunable_value();
  if (mode == "madvise" && malloc_huge_pages_buildable() && (v == "1" || v == "2")) return "malloc";
  return "none";
}

}  // namespace wafersim::sim

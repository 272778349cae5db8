#pragma once
// Runs the built `wafersim` executable in a shell and captures its output and exit code.

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace wafersim::test {

struct CommandResult {
  int code = -1;
  std::string out;
};

// Runs `wafersim ARGS`; stdout captured, stderr appended when `with_stderr`; `env` (shell
// assignments such as "NAME=value") set for the command alone.
inline CommandResult wafersim(const std::string& args, bool with_stderr = false, const std::string& env = "") {
  const std::string cmd = (env.empty() ? "" : env + " ") + std::string(WAFERSIM_BINARY) + " " + args +
                          (with_stderr ? " 2>&1" : " 2>/dev/null");
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace wafersim::test

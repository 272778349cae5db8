#include "sim/app/created_dirs.h"

#include <vector>

namespace wafersim::app {
namespace {

std::vector<std::filesystem::path>& created() {
  static std::vector<std::filesystem::path> dirs;
  return dirs;
}

}  // namespace

void note_created_dir(const std::filesystem::path& dir) { created().push_back(dir); }

void remove_empty_created_dirs() {
  for (auto it = created().rbegin(); it != created().rend(); ++it) {
    std::error_code ec;
    if (std::filesystem::is_directory(*it, ec) && std::filesystem::is_empty(*it, ec) && !ec)
      std::filesystem::remove(*it, ec);
  }
  created().clear();
}

}  // namespace wafersim::app

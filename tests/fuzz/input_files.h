#pragma once
// For fuzz targets whose input is several files: the input split at lines "--8<--" into at
// most `files` parts (the last holds the rest), and the writing of one part to a file.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace wafersim::fuzz {

inline std::vector<std::string> split_input(const std::uint8_t* data, std::size_t size, std::size_t files) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string cut = "\n--8<--\n";
  std::vector<std::string> out;
  std::size_t start = 0;
  while (out.size() + 1 < files) {
    const std::size_t at = text.find(cut, start);
    if (at == std::string::npos) break;
    out.push_back(text.substr(start, at - start));
    start = at + cut.size();
  }
  out.push_back(text.substr(start));
  return out;
}

inline void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

}  // namespace wafersim::fuzz

#pragma once
// Reading a run's trace files for the report: JSON files and window tables (CSV) checked
// against their description in meta.json, with errors naming the file, line and problem.

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/input_file.h"
#include "sim/errors.h"

namespace wafersim::app::report {

inline nlohmann::ordered_json read_json(const std::filesystem::path& p, const std::string& what) {
  const std::string text = sim::config::read_input_file(p.string(), what, sim::config::kMaxJsonBytes);
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::ordered_json::parse_error& e) {
    throw sim::InputError(fmt::format("{}: not valid JSON: {}", p.string(), e.what()));
  }
}

template <class T>
T field(const nlohmann::ordered_json& j, const char* key, const std::filesystem::path& file) {
  if (!j.contains(key)) throw sim::InputError(fmt::format("{}: missing key '{}'", file.string(), key));
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::ordered_json::exception&) {
    throw sim::InputError(fmt::format("{}: key '{}' has the wrong type", file.string(), key));
  }
}

// Reads a window table (CSV) checked against its description; calls row(fields) per row
// (window, keys..., values...).
template <class F>
void read_table(const std::filesystem::path& path, const nlohmann::ordered_json& describe, F&& row) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw sim::InputError(fmt::format("{}: cannot read the window table", path.string()));
  std::string expect = "window";
  for (const auto& c : describe.at("keys")) expect += "," + c.at("name").get<std::string>();
  for (const auto& c : describe.at("values")) expect += "," + c.at("name").get<std::string>();
  std::string line;
  std::getline(in, line);
  if (line != expect)
    throw sim::InputError(
        fmt::format("{}:1: header '{}' does not match meta.json (expected '{}')", path.string(), line, expect));
  const std::size_t n = 1 + describe.at("keys").size() + describe.at("values").size();
  std::vector<std::uint64_t> f(n);
  std::uint64_t number = 1;
  while (std::getline(in, line)) {
    ++number;
    const char* p = line.c_str();
    for (std::size_t i = 0; i < n; ++i) {
      char* end = nullptr;
      if (*p < '0' || *p > '9')
        throw sim::InputError(fmt::format("{}:{}: expected {} unsigned integers", path.string(), number, n));
      f[i] = std::strtoull(p, &end, 10);
      if (i + 1 < n && *end != ',')
        throw sim::InputError(fmt::format("{}:{}: expected {} comma-separated fields", path.string(), number, n));
      if (i + 1 == n && *end != '\0')
        throw sim::InputError(fmt::format("{}:{}: more than {} fields", path.string(), number, n));
      p = end + 1;
    }
    row(f, number);
  }
}

}  // namespace wafersim::app::report

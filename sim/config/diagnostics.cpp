#include "sim/config/diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace wafersim::sim::config {
namespace {

std::string join(const std::vector<Diagnostic>& ds) {
  std::string out;
  for (const auto& d : ds) {
    if (!out.empty()) out += '\n';
    out += d.str();
  }
  return out;
}

// Optimal-string-alignment distance, case-insensitive.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  auto eq = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  };
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      std::size_t cost = eq(a[i - 1], b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && eq(a[i - 1], b[j - 2]) && eq(a[i - 2], b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

}  // namespace

std::string Diagnostic::str() const {
  std::string where = location.str();
  if (where.empty()) where = "wafersim";
  if (key_path.empty()) return fmt::format("{}: error: {}", where, message);
  return fmt::format("{}: error: {}: {}", where, key_path, message);
}

ConfigError::ConfigError(std::vector<Diagnostic> diagnostics)
    : InputError(join(diagnostics)), diagnostics_(std::move(diagnostics)) {}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = 0;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (best.empty() || d < best_d) {
      best = c;
      best_d = d;
    }
  }
  std::size_t limit = std::max<std::size_t>(2, std::min(word.size(), best.size()) / 3);
  if (best.empty() || best_d > limit) return {};
  return best;
}

}  // namespace wafersim::sim::config

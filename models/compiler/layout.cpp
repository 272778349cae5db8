#include "models/compiler/layout.h"

#include <fmt/format.h>

#include <algorithm>

namespace wafersim::models::compiler {

StreamingLayout StreamingLayout::plan(const Target& target, std::uint64_t tokens, std::uint64_t max_features,
                                      std::uint32_t rows_per_band) {
  StreamingLayout l;
  l.width = target.width();
  l.height = target.height();
  l.tokens = tokens;
  // Columns: the largest divisor of the token count that fits the grid, so that every used
  // column holds the same number of tokens and none is padding.
  std::uint32_t cols = 1;
  for (std::uint64_t d = std::min<std::uint64_t>(tokens, l.width); d >= 1; --d)
    if (tokens % d == 0) {
      cols = static_cast<std::uint32_t>(d);
      break;
    }
  l.columns = cols;
  l.tokens_per_pe = static_cast<std::uint32_t>(tokens / cols);

  const fabric::MeshGeometry g = target.geometry();
  const std::uint32_t channels = g.edge_channels();
  std::vector<std::uint32_t> crow(channels);
  for (std::uint32_t c = 0; c < channels; ++c) crow[c] = g.channel_row(c);
  // Bands: every row belongs to the channel whose row is nearest (ties to the upper one).
  std::uint32_t smallest = l.height;
  for (std::uint32_t c = 0; c < channels; ++c) {
    Band b;
    b.channel = c;
    b.channel_row = crow[c];
    b.lo = c == 0 ? 0 : (crow[c - 1] + crow[c]) / 2 + 1;
    b.hi = c + 1 == channels ? l.height : (crow[c] + crow[c + 1]) / 2 + 1;
    smallest = std::min(smallest, b.hi - b.lo);
    l.bands.push_back(b);
  }
  // Rows used per band: no more than the band has, the colors allow, or the features need.
  std::uint32_t per_band = std::min(smallest, std::max<std::uint32_t>(1, rows_per_band));
  const std::uint64_t need = (max_features + channels - 1) / channels;
  per_band = static_cast<std::uint32_t>(std::min<std::uint64_t>(per_band, std::max<std::uint64_t>(1, need)));
  l.rows_per_band_used = per_band;
  for (auto& b : l.bands) {
    // The used rows of a band: a window of per_band rows around the channel row.
    std::uint32_t lo = b.channel_row >= per_band / 2 ? b.channel_row - per_band / 2 : 0;
    lo = std::max(lo, b.lo);
    if (lo + per_band > b.hi) lo = b.hi - per_band;
    std::uint32_t best = 0, best_d = ~0u;
    for (std::uint32_t y = lo; y < lo + per_band; ++y) {
      const auto s = static_cast<std::uint32_t>(l.rows.size());
      b.slices.push_back(s);
      const std::uint32_t d = y > b.channel_row ? y - b.channel_row : b.channel_row - y;
      if (d < best_d) {
        best_d = d;
        best = s;
      }
      l.position_of.push_back(y - lo);
      l.band_of.push_back(b.channel);
      l.rows.push_back(y);
    }
    b.anchor = best;
  }
  return l;
}

std::string StreamingLayout::describe() const {
  return fmt::format("{} tokens over {} columns ({} per PE), hidden over {} rows ({} of each of {} bands)", tokens,
                     columns, tokens_per_pe, rows.size(), rows_per_band_used, bands.size());
}

}  // namespace wafersim::models::compiler

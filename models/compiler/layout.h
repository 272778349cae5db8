#pragma once
// Where activations live on the wafer in the weight-streaming placement (docs/compiler.md):
// every sample's sequence x hidden matrix spread over the grid, the sequence (tokens of all
// samples, side by side) along the columns and the hidden dimension along the rows; and the
// edge channels that feed the rows.

#include <cstdint>
#include <string>
#include <vector>

#include "models/compiler/target.h"

namespace wafersim::models::compiler {

// The rows one west/east edge channel serves.
struct Band {
  std::uint32_t channel = 0;          // edge channel index (same on west and east)
  std::uint32_t channel_row = 0;      // the row the channel enters on
  std::uint32_t lo = 0, hi = 0;       // the band's rows [lo, hi)
  std::vector<std::uint32_t> slices;  // the slices (indices into StreamingLayout::rows) in the band, in row order
  std::uint32_t anchor = 0;           // the slice whose row is nearest the channel row (gradients leave there)
};

// Contract: slice s of a tensor with F features holds features split(F, slices(), s) and
// lives on row rows[s]; column x (x < columns) holds tokens [x * tokens_per_pe, (x+1) *
// tokens_per_pe); every used PE stores its part feature-major: element (feature f, token i)
// at f * tokens_per_pe + i of the tensor's buffer.
struct StreamingLayout {
  std::uint32_t width = 0, height = 0;
  std::uint32_t columns = 0;             // used columns 0 .. columns-1
  std::vector<std::uint32_t> rows;       // used rows, ascending; slice s on rows[s]
  std::uint64_t tokens = 0;              // batch x sequence
  std::uint32_t tokens_per_pe = 0;       // tokens / columns
  std::uint32_t rows_per_band_used = 0;  // at most this many rows of each band are used
  std::vector<Band> bands;
  std::vector<std::uint32_t> band_of;      // slice -> band
  std::vector<std::uint32_t> position_of;  // slice -> position within its band (its weight color)

  [[nodiscard]] std::uint32_t slices() const { return static_cast<std::uint32_t>(rows.size()); }
  [[nodiscard]] Span features(std::uint64_t count, std::uint32_t slice) const { return split(count, slices(), slice); }
  [[nodiscard]] std::uint64_t max_slice(std::uint64_t count) const {
    return count == 0 ? 0 : (count + slices() - 1) / slices();
  }
  [[nodiscard]] std::uint64_t used_pes() const { return std::uint64_t{columns} * rows.size(); }
  [[nodiscard]] std::string describe() const;

  // Plans the layout for `tokens` tokens and activations of at most `max_features` features
  // with at most `rows_per_band` rows used in each band (the weight colors a band needs).
  static StreamingLayout plan(const Target& target, std::uint64_t tokens, std::uint64_t max_features,
                              std::uint32_t rows_per_band);
};

}  // namespace wafersim::models::compiler

#pragma once
// Where activations live on the wafer in the weight-streaming placement (docs/compiler.md):
// every sample's sequence x hidden matrix spread over the grid, the sequence (tokens of all
// samples, side by side) along the columns and the hidden dimension along the rows; and the
// edge channels that feed the rows. With row groups (a small hidden dimension and many
// tokens) the bands are split into groups of whole bands, each holding the whole hidden
// dimension for its own share of the tokens.

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
// at f * tokens_per_pe + i of the tensor's buffer. With `groups` > 1, rows, bands, band_of
// and position_of describe group 0 (what the kernels compile for); group g holds slice s on
// row group_rows[g][s], its bands are group_bands[g] (channels shifted by g x the bands of a
// group) and its column x holds the tokens of the virtual column g * columns + x. Every
// group has the same shape relative to its channel rows (plan() checks it: uniform()).
struct StreamingLayout {
  std::uint32_t width = 0, height = 0;
  std::uint32_t columns = 0;             // used columns 0 .. columns-1
  std::vector<std::uint32_t> rows;       // used rows, ascending; slice s on rows[s]
  std::uint64_t tokens = 0;              // batch x sequence (all groups)
  std::uint32_t tokens_per_pe = 0;       // tokens / (groups x columns)
  std::uint32_t rows_per_band_used = 0;  // at most this many rows of each band are used
  std::vector<Band> bands;
  std::vector<std::uint32_t> band_of;                  // slice -> band
  std::vector<std::uint32_t> position_of;              // slice -> position within its band (its weight color)
  std::uint32_t groups = 1;                            // row groups (1: the whole grid is one group)
  std::vector<std::vector<std::uint32_t>> group_rows;  // group -> slice -> row (group_rows[0] == rows)
  std::vector<std::vector<Band>> group_bands;          // group -> its bands (group_bands[0] == bands)
  bool uniform = true;                                 // every group has group 0's shape relative to its channel rows

  [[nodiscard]] std::uint32_t slices() const { return static_cast<std::uint32_t>(rows.size()); }
  [[nodiscard]] Span features(std::uint64_t count, std::uint32_t slice) const { return split(count, slices(), slice); }
  [[nodiscard]] std::uint64_t max_slice(std::uint64_t count) const {
    return count == 0 ? 0 : (count + slices() - 1) / slices();
  }
  [[nodiscard]] std::uint64_t used_pes() const { return std::uint64_t{columns} * rows.size() * groups; }
  [[nodiscard]] std::uint64_t group_tokens() const { return tokens / groups; }
  [[nodiscard]] std::string describe() const;
  // Group g as a layout of its own (its rows and bands; band_of and position_of as group 0's).
  [[nodiscard]] StreamingLayout group(std::uint32_t g) const;

  // Plans the layout for `tokens` tokens and activations of at most `max_features` features
  // with at most `rows_per_band` rows used in each band (the weight colors a band needs), in
  // `groups` row groups (a divisor of the edge channels and of the tokens).
  static StreamingLayout plan(const Target& target, std::uint64_t tokens, std::uint64_t max_features,
                              std::uint32_t rows_per_band, std::uint32_t groups = 1);
};

// The choice between one group (tokens along all columns, the hidden dimension over all
// rows) and row groups, docs/compiler.md "Weight streaming: layout".
struct GroupChoice {
  std::uint32_t groups = 1;
  std::string why;  // the rule's figures, for the layout line
};

// Candidates: divisors G of the edge channels such that the tokens divide by G (and the
// batch when `whole_samples`), each group's rows (its bands x the rows a band can use) hold
// at least `max_features` rows, and the groups have a uniform shape. Among them the one with
// the fewest tokens per PE wins, ties to the smaller G (less edge traffic). `min_groups` 2
// leaves out G = 1 (forced groups; 1 is returned when there is no candidate).
GroupChoice choose_groups(const Target& target, std::uint64_t tokens, std::uint64_t batch, bool whole_samples,
                          std::uint64_t max_features, std::uint32_t rows_per_band, std::uint32_t min_groups = 1);

}  // namespace wafersim::models::compiler

#include "models/compiler/layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "sim/errors.h"

namespace wafersim::models::compiler {

namespace {

// The largest divisor of `tokens` that is at most `width`: every used column holds the same
// number of tokens and none is padding.
std::uint32_t columns_for(std::uint64_t tokens, std::uint32_t width) {
  for (std::uint64_t d = std::min<std::uint64_t>(tokens, width); d >= 1; --d)
    if (tokens % d == 0) return static_cast<std::uint32_t>(d);
  return 1;
}

std::int64_t rel(std::uint32_t row, std::uint32_t channel_row) {
  return static_cast<std::int64_t>(row) - static_cast<std::int64_t>(channel_row);
}

}  // namespace

StreamingLayout StreamingLayout::plan(const Target& target, std::uint64_t tokens, std::uint64_t max_features,
                                      std::uint32_t rows_per_band, std::uint32_t groups) {
  const fabric::MeshGeometry g = target.geometry();
  const std::uint32_t channels = g.edge_channels();
  if (groups == 0 || channels % groups != 0 || tokens % groups != 0)
    throw std::logic_error(
        fmt::format("layout: {} groups for {} edge channels and {} tokens", groups, channels, tokens));
  StreamingLayout l;
  l.width = target.width();
  l.height = target.height();
  l.tokens = tokens;
  l.groups = groups;
  l.columns = columns_for(tokens / groups, l.width);
  const std::uint64_t per_pe = tokens / groups / l.columns;
  if (per_pe > std::numeric_limits<std::uint32_t>::max())
    throw sim::InputError(fmt::format(
        "batch x sequence = {} tokens over {} columns is {} tokens per PE, more than a PE can address (2^32): the "
        "model does not fit this wafer; give a smaller batch or sequence",
        tokens, l.columns, per_pe));
  l.tokens_per_pe = static_cast<std::uint32_t>(per_pe);

  std::vector<std::uint32_t> crow(channels);
  for (std::uint32_t c = 0; c < channels; ++c) crow[c] = g.channel_row(c);
  // Bands: every row belongs to the channel whose row is nearest (ties to the upper one).
  std::vector<Band> all;
  std::uint32_t smallest = l.height;
  for (std::uint32_t c = 0; c < channels; ++c) {
    Band b;
    b.channel = c;
    b.channel_row = crow[c];
    b.lo = c == 0 ? 0 : (crow[c - 1] + crow[c]) / 2 + 1;
    b.hi = c + 1 == channels ? l.height : (crow[c] + crow[c + 1]) / 2 + 1;
    smallest = std::min(smallest, b.hi - b.lo);
    all.push_back(b);
  }
  // Rows used per band: no more than the band has, the colors allow, or the features need
  // (each group holds all of them).
  const std::uint32_t per_group = channels / groups;
  std::uint32_t per_band = std::min(smallest, std::max<std::uint32_t>(1, rows_per_band));
  const std::uint64_t need = (max_features + per_group - 1) / per_group;
  per_band = static_cast<std::uint32_t>(std::min<std::uint64_t>(per_band, std::max<std::uint64_t>(1, need)));
  l.rows_per_band_used = per_band;
  l.group_rows.assign(groups, {});
  l.group_bands.assign(groups, {});
  for (auto& b : all) {
    const std::uint32_t grp = b.channel / per_group;
    auto& rows = l.group_rows[grp];
    // The used rows of a band: a window of per_band rows around the channel row.
    std::uint32_t lo = b.channel_row >= per_band / 2 ? b.channel_row - per_band / 2 : 0;
    lo = std::max(lo, b.lo);
    if (lo + per_band > b.hi) lo = b.hi - per_band;
    std::uint32_t best = 0, best_d = ~0u;
    for (std::uint32_t y = lo; y < lo + per_band; ++y) {
      const auto s = static_cast<std::uint32_t>(rows.size());
      b.slices.push_back(s);
      const std::uint32_t d = y > b.channel_row ? y - b.channel_row : b.channel_row - y;
      if (d < best_d) {
        best_d = d;
        best = s;
      }
      if (grp == 0) {
        l.position_of.push_back(y - lo);
        l.band_of.push_back(b.channel);
      }
      rows.push_back(y);
    }
    b.anchor = best;
    l.group_bands[grp].push_back(b);
  }
  l.rows = l.group_rows[0];
  l.bands = l.group_bands[0];
  // Group g compiles as group 0: the same rows, band bounds and anchors relative to the
  // channel rows (so the same programs and the same link loads).
  for (std::uint32_t k = 1; k < groups; ++k)
    for (std::uint32_t i = 0; i < per_group; ++i) {
      const Band &a = l.bands[i], &b = l.group_bands[k][i];
      bool same = rel(a.lo, a.channel_row) == rel(b.lo, b.channel_row) &&
                  rel(a.hi, a.channel_row) == rel(b.hi, b.channel_row) && a.anchor == b.anchor && a.slices == b.slices;
      for (std::uint32_t s : a.slices)
        same = same && rel(l.rows[s], a.channel_row) == rel(l.group_rows[k][s], b.channel_row);
      l.uniform = l.uniform && same;
    }
  return l;
}

StreamingLayout StreamingLayout::group(std::uint32_t g) const {
  StreamingLayout l = *this;
  l.rows = group_rows.at(g);
  l.bands = group_bands.at(g);
  return l;
}

std::string StreamingLayout::describe() const {
  if (groups == 1)
    return fmt::format("{} tokens over {} columns ({} per PE), hidden over {} rows ({} of each of {} bands)", tokens,
                       columns, tokens_per_pe, rows.size(), rows_per_band_used, bands.size());
  return fmt::format(
      "{} row groups of {} tokens each over {} columns ({} per PE), hidden over {} rows per group ({} of each of {} "
      "bands)",
      groups, group_tokens(), columns, tokens_per_pe, rows.size(), rows_per_band_used, bands.size());
}

GroupChoice choose_groups(const Target& target, std::uint64_t tokens, std::uint64_t batch, bool whole_samples,
                          std::uint64_t max_features, std::uint32_t rows_per_band, std::uint32_t min_groups) {
  const fabric::MeshGeometry geo = target.geometry();
  const std::uint32_t channels = geo.edge_channels();
  const StreamingLayout one = StreamingLayout::plan(target, tokens, max_features, rows_per_band, 1);
  // The rows a band can use (its height and the weight colors), as plan() counts them.
  std::uint32_t per_band = std::max<std::uint32_t>(1, rows_per_band);
  for (const auto& b : one.bands) per_band = std::min(per_band, b.hi - b.lo);
  const std::uint64_t usable = std::uint64_t{channels} * per_band;
  GroupChoice best;
  std::uint32_t best_t = ~0u;
  std::string rejected;
  bool more_fit = false;  // some G > 1 is a candidate
  for (std::uint32_t G = 1; G <= channels; ++G) {
    if (channels % G != 0 || G < min_groups) continue;
    const std::uint64_t rows = usable / G;
    std::string no;
    if (tokens % G != 0)
      no = fmt::format("{} tokens do not divide", tokens);
    else if (whole_samples && batch % G != 0)
      no = fmt::format("batch {} does not divide (a group holds whole samples)", batch);
    else if (G > 1 && rows < max_features)
      no = fmt::format("{} rows per group < {} features", rows, max_features);
    if (no.empty()) {
      const StreamingLayout l = StreamingLayout::plan(target, tokens, max_features, rows_per_band, G);
      if (!l.uniform) no = "its bands differ in shape";
      more_fit = more_fit || (no.empty() && G > 1);
      if (no.empty() && l.tokens_per_pe < best_t) {
        best_t = l.tokens_per_pe;
        best.groups = G;
      }
    }
    if (!no.empty() && rejected.empty() && G > 1) rejected = fmt::format("{} groups: {}", G, no);
  }
  if (best_t == ~0u) {  // no candidate (forced groups)
    best.groups = 1;
    best.why = fmt::format("no row grouping fits ({}; tokens : hidden = {} : {}, {} usable rows)",
                           rejected.empty() ? "one edge channel" : rejected, tokens, max_features, usable);
    return best;
  }
  const std::uint64_t copies = usable / std::max<std::uint64_t>(1, max_features);
  const std::string ratio = fmt::format("tokens : hidden = {} : {}, {} usable rows", tokens, max_features, usable);
  if (best.groups > 1)
    best.why = fmt::format("{} hold the hidden dimension {} times: {} groups, {} tokens per PE against {} with one",
                           ratio, copies, best.groups, best_t, one.tokens_per_pe);
  else if (more_fit)
    best.why =
        fmt::format("{} hold the hidden dimension {} times, but more groups would not lower the {} tokens per PE",
                    ratio, copies, best_t);
  else if (copies < 2)
    best.why = fmt::format("{} do not hold the hidden dimension twice", ratio);
  else
    best.why = fmt::format("{} hold the hidden dimension {} times, but {}", ratio, copies,
                           rejected.empty() ? std::string("there is one edge channel") : rejected);
  return best;
}

}  // namespace wafersim::models::compiler

#include "models/sparsity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

#include "models/model_spec.h"
#include "sim/config/diagnostics.h"
#include "sim/config/input_file.h"
#include "sim/splitmix64.h"

__extension__ typedef unsigned __int128 u128;

namespace wafersim::models {
namespace {

bool has_own_weights(const LayerSpec& l) {
  return (l.kind == LayerKind::Linear || l.kind == LayerKind::Gemv) && l.tied_to.empty();
}

}  // namespace

std::uint64_t kept_weights(double density, std::uint64_t n) {
  const auto k = static_cast<std::uint64_t>(std::llround(density * static_cast<double>(n)));
  return std::min(n, std::max<std::uint64_t>(1, k));
}

WeightMask random_mask(std::uint64_t seed, const std::string& layer, std::uint64_t n, std::uint64_t kept) {
  WeightMask keep(n, 0);
  std::vector<std::uint64_t> order(n);
  std::iota(order.begin(), order.end(), std::uint64_t{0});
  sim::SplitMix64 rng(seed ^ sim::fnv1a64(layer));
  for (std::uint64_t i = 0; i < kept && i < n; ++i) {
    const auto span = static_cast<u128>(n - i);
    const auto j = i + static_cast<std::uint64_t>((static_cast<u128>(rng.next()) * span) >> 64);
    std::swap(order[i], order[j]);
    keep[order[i]] = 1;
  }
  return keep;
}

WeightMask LayerSparsity::mask(std::uint64_t seed) const {
  if (file_mask) return *file_mask;
  return random_mask(seed, layer, elements(), kept);
}

const LayerSparsity* SparsitySpec::find(const std::string& layer) const {
  for (const auto& l : layers)
    if (l.layer == layer) return &l;
  return nullptr;
}

WeightMask read_mask_file(const std::string& path, std::uint64_t rows, std::uint64_t cols,
                          const std::string& key_path) {
  using sim::config::ConfigError;
  using sim::config::Diagnostic;
  using sim::config::Location;
  auto fail = [&](int line, int col, const std::string& msg) {
    throw ConfigError(Diagnostic{Location{path, line, col}, key_path, msg});
  };
  const std::string why = sim::config::unreadable_reason(path);
  if (!why.empty()) fail(0, 0, fmt::format("cannot read the mask file '{}': {}", path, why));
  sim::config::check_input_file(path, "the mask file", sim::config::kMaxMaskBytes);
  std::ifstream in(path);
  if (!in) fail(0, 0, fmt::format("cannot read the mask file '{}'", path));
  const std::string shape = fmt::format("{} x {} weights", rows, cols);
  WeightMask mask;
  mask.reserve(rows * cols);
  std::string text;
  int line = 0;
  std::uint64_t row = 0, kept = 0;
  while (std::getline(in, text)) {
    ++line;
    std::uint64_t n = 0;
    int last = 0;
    bool blank = true;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      const int col = static_cast<int>(i + 1);
      if (c == '#') break;
      if (c == ' ' || c == '\t' || c == '\r') continue;
      if (blank && row == rows)
        fail(line, col, fmt::format("more than {} rows: the mask of {} has one line per row", rows, shape));
      blank = false;
      if (c != '0' && c != '1')
        fail(line, col, fmt::format("expected '0' (pruned) or '1' (kept), found '{}'", std::string(1, c)));
      if (n == cols)
        fail(line, col, fmt::format("row {} has more than {} entries (the columns of {})", row + 1, cols, shape));
      mask.push_back(c == '1' ? 1 : 0);
      kept += c == '1' ? 1 : 0;
      ++n;
      last = col;
    }
    if (blank) continue;
    if (n != cols)
      fail(line, last + 1,
           fmt::format("row {} has {} entries, expected {} (the columns of {})", row + 1, n, cols, shape));
    ++row;
  }
  if (row != rows)
    fail(line + 1, 1, fmt::format("the file ends after {} rows, expected {} (the rows of {})", row, rows, shape));
  if (kept == 0) fail(1, 1, fmt::format("the mask keeps no weight of the {}; a layer needs at least one", shape));
  return mask;
}

SparsitySpec read_sparsity(sim::config::Section root, const std::vector<LayerSpec>& layers) {
  SparsitySpec out;
  auto s = root.section("sparsity", "unstructured weight sparsity of linear layers (training runs)");
  const double density =
      s.real("density", 1.0, 0.0, 1.0, "kept fraction of every linear layer's weights (random mask; 1: dense)");
  out.seed = static_cast<std::uint64_t>(
      s.integer("seed", 1, 0, std::int64_t{1} << 53, "seed of the random masks (with each layer's name)"));
  if (density <= 0.0) s.error("density", "a density of 0 keeps no weight: expected a value in (0, 1]");
  auto entries = s.sections("layers", "per-layer densities or mask files, overriding sparsity.density");
  std::map<std::string, std::pair<double, std::string>> chosen;  // layer -> density, mask file
  std::map<std::string, sim::config::Section*> where;
  for (auto& e : entries) {
    const std::string name = e.text("name", "", "a linear or gemv layer with its own weights");
    const double d = e.real("density", 1.0, 0.0, 1.0, "kept fraction of its weights (absent: sparsity.density)");
    std::string file =
        e.text("mask", "", "mask file: one line per weight row of '0'/'1' per column (relative to the model file)");
    if (name.empty()) {
      if (e.has("name")) e.error("name", "expected a layer name");
      continue;
    }
    const LayerSpec* l = nullptr;
    std::vector<std::string> names;
    for (const auto& x : layers) {
      if (x.name == name) l = &x;
      if (has_own_weights(x)) names.push_back(x.name);
    }
    if (!l) {
      const std::string hint = sim::config::closest_match(name, names);
      e.error("name", fmt::format("no layer '{}' in the model{}", name,
                                  hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint)));
      continue;
    }
    if (!has_own_weights(*l)) {
      e.error("name", fmt::format("sparsity applies to the weights of linear and gemv layers; '{}' is a {}{}", name,
                                  to_string(l->kind), l->tied_to.empty() ? "" : " tied to another layer's weights"));
      continue;
    }
    if (chosen.count(name)) {
      e.error("name", fmt::format("layer '{}' is listed twice", name));
      continue;
    }
    if (e.has("density") && !file.empty()) {
      e.error("mask", "give either a density or a mask file, not both");
      continue;
    }
    if (e.has("density") && d <= 0.0) {
      e.error("density", "a density of 0 keeps no weight: expected a value in (0, 1]");
      continue;
    }
    if (!file.empty()) {
      const sim::config::Location at = e.location("mask");
      std::filesystem::path p(file);
      if (p.is_relative() && !at.file.empty() && at.file.front() != '<')
        p = std::filesystem::path(at.file).parent_path() / p;
      file = p.lexically_normal().string();
    }
    chosen[name] = {e.has("density") ? d : density, file};
    where[name] = &e;
  }
  for (const auto& l : layers) {
    if (!has_own_weights(l)) continue;
    auto it = chosen.find(l.name);
    const double d = it == chosen.end() ? density : it->second.first;
    const std::string file = it == chosen.end() ? std::string() : it->second.second;
    if (file.empty() && (d >= 1.0 || d <= 0.0)) continue;
    LayerSparsity ls;
    ls.layer = l.name;
    ls.rows = l.in_features;
    ls.cols = l.features;
    if (ls.elements() == 0) continue;  // a graph error already reported
    if (ls.elements() > 0xFFFFFFFFULL) {
      root.error("sparsity",
                 fmt::format("layer '{}' has {} weights: sparse indices are 32-bit", l.name, ls.elements()));
      continue;
    }
    if (!file.empty()) {
      ls.mask_file = file;
      auto m = std::make_shared<WeightMask>(read_mask_file(file, ls.rows, ls.cols, where[l.name]->path("mask")));
      ls.kept = static_cast<std::uint64_t>(std::count(m->begin(), m->end(), std::uint8_t{1}));
      ls.density = static_cast<double>(ls.kept) / static_cast<double>(ls.elements());
      ls.file_mask = std::move(m);
    } else {
      ls.density = d;
      ls.kept = kept_weights(d, ls.elements());
    }
    out.layers.push_back(std::move(ls));
  }
  return out;
}

}  // namespace wafersim::models

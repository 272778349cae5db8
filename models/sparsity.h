#pragma once
// Unstructured weight sparsity of a model: which weights of each linear layer are kept, from a
// density (a random mask drawn from a seed) or a mask file, read from the model's `sparsity:`
// section (docs/training.md, "Sparse weights").

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/schema.h"

namespace wafersim::models {

struct LayerSpec;

// Per weight element: 1 kept, 0 pruned (row-major over the K x N weights).
using WeightMask = std::vector<std::uint8_t>;

// The sparsity of one linear or gemv layer's K x N weight matrix (its bias stays dense).
struct LayerSparsity {
  std::string layer;
  std::uint64_t rows = 0, cols = 0;  // K x N
  std::uint64_t kept = 0;            // weights kept (nonzero), 1 .. rows x cols
  double density = 1.0;              // as configured (a mask file: kept / elements)
  std::string mask_file;             // empty: random mask from the seed
  std::shared_ptr<const WeightMask> file_mask;
  [[nodiscard]] std::uint64_t elements() const { return rows * cols; }
  // The mask: the file's, or `kept` weights drawn from (seed, layer name).
  [[nodiscard]] WeightMask mask(std::uint64_t seed) const;
};

struct SparsitySpec {
  std::uint64_t seed = 1;
  std::vector<LayerSparsity> layers;  // the sparse layers (density below 1 or a mask), in model order
  [[nodiscard]] const LayerSparsity* find(const std::string& layer) const;
  [[nodiscard]] bool any() const { return !layers.empty(); }
};

// Weights kept at `density` of `n`: round(density x n), at least 1.
std::uint64_t kept_weights(double density, std::uint64_t n);

// Exactly `kept` of `n` elements, chosen by a partial Fisher-Yates shuffle driven by
// splitmix64 from (seed, layer name): the same on every platform and compiler.
WeightMask random_mask(std::uint64_t seed, const std::string& layer, std::uint64_t n, std::uint64_t kept);

// Reads a mask file: `rows` lines of `cols` characters '0' or '1' (spaces and tabs between
// them ignored; '#' starts a comment; blank lines skipped). Throws sim::config::ConfigError at
// the file's line and column (key_path names the YAML key that referred to it) for a bad
// character, a row of the wrong length, a wrong number of rows, a mask keeping nothing or an
// unreadable file.
WeightMask read_mask_file(const std::string& path, std::uint64_t rows, std::uint64_t cols, const std::string& key_path);

// The `sparsity:` section of a model, checked against its (validated) layers.
SparsitySpec read_sparsity(sim::config::Section root, const std::vector<LayerSpec>& layers);

}  // namespace wafersim::models

#pragma once
// Dense tensors of the reference: values of one format stored as bit patterns, shaped
// [batch, sequence, features] like activations (a matrix rows x cols is [1, rows, cols], a
// vector of n is [1, 1, n]), and token ids.

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_spec.h"
#include "models/reference/arith.h"
#include "models/reference/format.h"

namespace wafersim::models::reference {

Shape matrix_shape(std::uint64_t rows, std::uint64_t cols);
Shape vector_shape(std::uint64_t n);
std::string to_string(const Shape& s);

class Tensor {
 public:
  Tensor() = default;
  // All +0. Throws std::invalid_argument when shape.features is 0.
  Tensor(Format f, const Shape& shape);
  // Each value rounded once to the format; values.size() must be shape.elements().
  static Tensor of_values(Format f, const Shape& shape, const std::vector<double>& values);
  // Every element lo + (hi - lo) u, u the next SplitMix64(seed).uniform() in element order,
  // rounded once to the format.
  static Tensor uniform(Format f, const Shape& shape, double lo, double hi, std::uint64_t seed);
  static Tensor filled(Format f, const Shape& shape, double value);

  [[nodiscard]] Format format() const { return format_; }
  [[nodiscard]] const Shape& shape() const { return shape_; }
  [[nodiscard]] std::size_t size() const { return bits_.size(); }
  [[nodiscard]] std::uint64_t rows() const { return shape_.rows(); }
  [[nodiscard]] std::uint64_t cols() const { return shape_.features; }
  [[nodiscard]] Arith arith() const { return Arith(format_); }

  [[nodiscard]] Bits bits(std::size_t i) const { return bits_[i]; }
  void set_bits(std::size_t i, Bits b) { bits_[i] = b; }
  [[nodiscard]] double value(std::size_t i) const;
  void set_value(std::size_t i, double v);  // rounded once
  [[nodiscard]] std::vector<double> values() const;
  // Element (row, col) of the [rows, features] view.
  [[nodiscard]] std::size_t at(std::uint64_t row, std::uint64_t col) const {
    return static_cast<std::size_t>(row * shape_.features + col);
  }
  // "[b, s, f]" of element i.
  [[nodiscard]] std::string index_name(std::size_t i) const;

  // Every element converted to `f` (exact when widening, rounded once otherwise).
  [[nodiscard]] Tensor converted(Format f) const;
  // Samples [first, first + count) of the batch.
  [[nodiscard]] Tensor batch_slice(std::uint64_t first, std::uint64_t count) const;
  // Same format and shape, identical bit patterns.
  friend bool operator==(const Tensor& a, const Tensor& b);
  friend bool operator!=(const Tensor& a, const Tensor& b) { return !(a == b); }

  // Host floats (exact for fp16, bf16, fp32) and back (fp32).
  [[nodiscard]] std::vector<float> to_floats() const;
  static Tensor of_floats(const Shape& shape, const std::vector<float>& values);

 private:
  Format format_ = Format::FP32;
  Shape shape_{1, 1, 0};
  std::vector<Bits> bits_;
};

// Token ids or labels, [batch, sequence] (shape.features 0).
struct TokenIds {
  Shape shape{1, 1, 0};
  std::vector<std::uint32_t> ids;
  [[nodiscard]] TokenIds batch_slice(std::uint64_t first, std::uint64_t count) const;
};

}  // namespace wafersim::models::reference

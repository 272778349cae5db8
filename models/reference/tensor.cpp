#include "models/reference/tensor.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "models/reference/random.h"

namespace wafersim::models::reference {

Shape matrix_shape(std::uint64_t rows, std::uint64_t cols) { return Shape{1, rows, cols}; }
Shape vector_shape(std::uint64_t n) { return Shape{1, 1, n}; }
std::string to_string(const Shape& s) { return fmt::format("[{}, {}, {}]", s.batch, s.sequence, s.features); }

Tensor::Tensor(Format f, const Shape& shape) : format_(f), shape_(shape) {
  if (shape.features == 0)
    throw std::invalid_argument("reference: a tensor needs features > 0 (" + to_string(shape) + ")");
  bits_.assign(static_cast<std::size_t>(shape.elements()), Arith::kZero);
}

Tensor Tensor::of_values(Format f, const Shape& shape, const std::vector<double>& values) {
  Tensor t(f, shape);
  if (values.size() != t.size())
    throw std::invalid_argument(
        fmt::format("reference: {} values for a tensor of shape {}", values.size(), to_string(shape)));
  const Arith a(f);
  for (std::size_t i = 0; i < values.size(); ++i) t.bits_[i] = a.of(values[i]);
  return t;
}

Tensor Tensor::uniform(Format f, const Shape& shape, double lo, double hi, std::uint64_t seed) {
  Tensor t(f, shape);
  SplitMix64 rng(seed);
  const Arith a(f);
  for (auto& b : t.bits_) b = a.of(rng.uniform(lo, hi));
  return t;
}

Tensor Tensor::filled(Format f, const Shape& shape, double value) {
  Tensor t(f, shape);
  const Bits b = Arith(f).of(value);
  for (auto& x : t.bits_) x = b;
  return t;
}

double Tensor::value(std::size_t i) const { return arith().value(bits_[i]); }

void Tensor::set_value(std::size_t i, double v) { bits_[i] = arith().of(v); }

std::vector<double> Tensor::values() const {
  std::vector<double> v(bits_.size());
  const Arith a = arith();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = a.value(bits_[i]);
  return v;
}

std::string Tensor::index_name(std::size_t i) const {
  const std::uint64_t f = shape_.features ? shape_.features : 1;
  const std::uint64_t row = i / f;
  return fmt::format("[{}, {}, {}]", row / shape_.sequence, row % shape_.sequence, i % f);
}

Tensor Tensor::converted(Format f) const {
  Tensor t(f, shape_);
  const Arith a(f);
  for (std::size_t i = 0; i < bits_.size(); ++i) t.bits_[i] = a.from(format_, bits_[i]);
  return t;
}

Tensor Tensor::batch_slice(std::uint64_t first, std::uint64_t count) const {
  if (first + count > shape_.batch || count == 0)
    throw std::invalid_argument(
        fmt::format("reference: samples [{}, {}) of a batch of {}", first, first + count, shape_.batch));
  Tensor t(format_, Shape{count, shape_.sequence, shape_.features});
  const std::size_t per_sample = static_cast<std::size_t>(shape_.sequence * shape_.features);
  std::copy(bits_.begin() + static_cast<std::ptrdiff_t>(first * per_sample),
            bits_.begin() + static_cast<std::ptrdiff_t>((first + count) * per_sample), t.bits_.begin());
  return t;
}

bool operator==(const Tensor& a, const Tensor& b) {
  return a.format_ == b.format_ && a.shape_ == b.shape_ && a.bits_ == b.bits_;
}

std::vector<float> Tensor::to_floats() const {
  if (format_ == Format::FP64) throw std::invalid_argument("reference: an fp64 tensor has no exact float copy");
  std::vector<float> out(bits_.size());
  const Arith a = arith();
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(a.value(bits_[i]));
  return out;
}

Tensor Tensor::of_floats(const Shape& shape, const std::vector<float>& values) {
  Tensor t(Format::FP32, shape);
  if (values.size() != t.size())
    throw std::invalid_argument(
        fmt::format("reference: {} floats for a tensor of shape {}", values.size(), to_string(shape)));
  const Arith a(Format::FP32);
  for (std::size_t i = 0; i < values.size(); ++i) t.bits_[i] = a.of(values[i]);
  return t;
}

TokenIds TokenIds::batch_slice(std::uint64_t first, std::uint64_t count) const {
  if (first + count > shape.batch || count == 0)
    throw std::invalid_argument(
        fmt::format("reference: samples [{}, {}) of a batch of {}", first, first + count, shape.batch));
  TokenIds t;
  t.shape = Shape{count, shape.sequence, 0};
  const auto s = static_cast<std::ptrdiff_t>(shape.sequence);
  t.ids.assign(ids.begin() + static_cast<std::ptrdiff_t>(first) * s,
               ids.begin() + static_cast<std::ptrdiff_t>(first + count) * s);
  return t;
}

}  // namespace wafersim::models::reference

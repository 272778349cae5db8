#include "models/reference/cross_entropy.h"

#include <vector>

#include "models/reference/checks.h"
#include "models/reference/embedding.h"
#include "models/reference/softmax.h"

namespace wafersim::models::reference {
namespace {

void check(const Tensor& logits, const TokenIds& labels, const char* kernel) {
  detail::require(labels.shape.batch == logits.shape().batch && labels.shape.sequence == logits.shape().sequence,
                  kernel,
                  fmt::format("labels [{}, {}] for logits {}", labels.shape.batch, labels.shape.sequence,
                              to_string(logits.shape())));
  check_ids(labels, logits.cols(), "cross_entropy labels");
}

// The row's terms: e (exponentials), its maximum and sum.
struct Row {
  std::vector<Bits> x, e;
  Bits max = 0, sum = 0;
};

void row_terms(const Arith& A, const Tensor& xa, std::uint64_t r, Row& row) {
  const std::uint64_t n = xa.cols();
  row.x.resize(n);
  for (std::uint64_t j = 0; j < n; ++j) row.x[j] = xa.bits(xa.at(r, j));
  row.sum = softmax_terms(A, row.x.data(), n, row.e);
  row.max = row.x[0];
  for (std::uint64_t j = 1; j < n; ++j) row.max = A.max(row.max, row.x[j]);
}

}  // namespace

Tensor cross_entropy_forward(const Tensor& logits, const TokenIds& labels) {
  check(logits, labels, "cross_entropy");
  const Format a = accumulation_of(logits.format());
  const Arith A(a);
  const Tensor xa = logits.converted(a);
  const std::uint64_t R = logits.rows();
  Bits total = Arith::kZero;
  Row row;
  for (std::uint64_t r = 0; r < R; ++r) {
    row_terms(A, xa, r, row);
    const Bits lse = A.add(row.max, A.log(row.sum));
    total = A.add(total, A.sub(lse, row.x[labels.ids[r]]));
  }
  Tensor loss(a, vector_shape(1));
  loss.set_bits(0, A.mul(total, A.of(1.0 / static_cast<double>(R))));
  return loss;
}

Tensor cross_entropy_backward(const Tensor& logits, const TokenIds& labels) {
  check(logits, labels, "cross_entropy backward");
  const Format s = logits.format(), a = accumulation_of(s);
  const Arith A(a), S(s);
  const Tensor xa = logits.converted(a);
  const std::uint64_t R = logits.rows();
  const Bits inv_rows = A.of(1.0 / static_cast<double>(R)), one = A.of(1.0);
  Tensor dx(s, logits.shape());
  Row row;
  for (std::uint64_t r = 0; r < R; ++r) {
    row_terms(A, xa, r, row);
    const Bits inv = A.recip(row.sum);
    for (std::uint64_t j = 0; j < logits.cols(); ++j) {
      Bits t = A.mul(row.e[j], inv);
      if (j == labels.ids[r]) t = A.sub(t, one);
      dx.set_bits(dx.at(r, j), S.from(a, A.mul(t, inv_rows)));
    }
  }
  return dx;
}

}  // namespace wafersim::models::reference

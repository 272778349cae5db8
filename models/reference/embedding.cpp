#include "models/reference/embedding.h"

#include "models/reference/checks.h"
#include "sim/errors.h"

namespace wafersim::models::reference {
using detail::require;

void check_ids(const TokenIds& ids, std::uint64_t limit, const char* what) {
  require(ids.ids.size() == ids.shape.rows(), what,
          fmt::format("{} ids for shape [{}, {}]", ids.ids.size(), ids.shape.batch, ids.shape.sequence));
  for (std::size_t r = 0; r < ids.ids.size(); ++r)
    if (ids.ids[r] >= limit)
      throw sim::InputError(fmt::format("{}: id {} at sample {}, position {} is outside [0, {})", what, ids.ids[r],
                                        r / ids.shape.sequence, r % ids.shape.sequence, limit));
}

Tensor embedding_forward(const TokenIds& tokens, const Tensor& table, const Tensor* positions) {
  const Format s = table.format();
  const std::uint64_t d = table.cols(), S = tokens.shape.sequence;
  check_ids(tokens, table.rows(), "embedding tokens");
  if (positions) {
    detail::require_format(*positions, s, "embedding", "the positions");
    require(positions->cols() == d && positions->rows() >= S, "embedding",
            fmt::format("positions {} do not cover {} positions of {} features", to_string(positions->shape()), S, d));
  }
  const Arith A(s);
  Tensor y(s, Shape{tokens.shape.batch, S, d});
  for (std::uint64_t r = 0; r < tokens.shape.rows(); ++r) {
    const std::uint64_t v = tokens.ids[r];
    for (std::uint64_t j = 0; j < d; ++j) {
      Bits e = table.bits(table.at(v, j));
      if (positions) e = A.add(e, positions->bits(positions->at(r % S, j)));
      y.set_bits(y.at(r, j), e);
    }
  }
  return y;
}

EmbeddingGrads embedding_backward(const TokenIds& tokens, const Tensor& dy, std::uint64_t vocabulary,
                                  std::uint64_t position_rows) {
  const Format s = dy.format();
  const Format a = accumulation_of(s);
  const std::uint64_t d = dy.cols(), S = tokens.shape.sequence;
  check_ids(tokens, vocabulary, "embedding tokens");
  require(dy.rows() == tokens.shape.rows(), "embedding backward",
          fmt::format("{} gradient rows for {} tokens", dy.rows(), tokens.shape.rows()));
  const Arith A(a);
  const Tensor ga = dy.converted(a);
  EmbeddingGrads g{Tensor(a, matrix_shape(vocabulary, d)), {}};
  for (std::uint64_t r = 0; r < tokens.shape.rows(); ++r) {
    const std::uint64_t v = tokens.ids[r];
    for (std::uint64_t j = 0; j < d; ++j) {
      const std::size_t i = g.table.at(v, j);
      g.table.set_bits(i, A.add(g.table.bits(i), ga.bits(ga.at(r, j))));
    }
  }
  if (position_rows > 0) {
    require(position_rows >= S, "embedding backward",
            fmt::format("{} position rows for a sequence of {}", position_rows, S));
    g.positions = Tensor(a, matrix_shape(position_rows, d));
    for (std::uint64_t b = 0; b < tokens.shape.batch; ++b)
      for (std::uint64_t t = 0; t < S; ++t)
        for (std::uint64_t j = 0; j < d; ++j) {
          const std::size_t i = g.positions.at(t, j);
          g.positions.set_bits(i, A.add(g.positions.bits(i), ga.bits(ga.at(b * S + t, j))));
        }
  }
  return g;
}

}  // namespace wafersim::models::reference

#pragma once
// Embedding lookup with optional learned positions (docs/reference.md, "embedding").

#include <cstdint>

#include "models/reference/tensor.h"

namespace wafersim::models::reference {

// tokens [B, S], table [1, V, d], positions [1, S', d] (S' >= S) or null -> [B, S, d]:
// y[b, t] = table[token] (a copy), or table[token] + positions[t] rounded once (fadd).
// Throws sim::InputError naming the sample and position of a token id >= V.
Tensor embedding_forward(const TokenIds& tokens, const Tensor& table, const Tensor* positions);

struct EmbeddingGrads {
  Tensor table;      // accumulation format [1, V, d]
  Tensor positions;  // accumulation format [1, S', d]; empty without positions
};
// dtable[v] = +0, then + dy[r] for every row r (b-major, increasing) whose token is v, each
// addition rounded in the accumulation format; dpositions[t] = sum over b increasing of dy[b, t].
EmbeddingGrads embedding_backward(const TokenIds& tokens, const Tensor& dy, std::uint64_t vocabulary,
                                  std::uint64_t position_rows);

// Throws sim::InputError when an id is >= limit ("what" names the ids in the message).
void check_ids(const TokenIds& ids, std::uint64_t limit, const char* what);

}  // namespace wafersim::models::reference

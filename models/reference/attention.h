#pragma once
// Scaled dot-product attention, multi-head and grouped-query, with an optional causal mask
// (docs/reference.md, "attention").

#include <cstdint>

#include "models/reference/tensor.h"

namespace wafersim::models::reference {

struct AttentionShape {
  std::uint32_t heads = 1;
  std::uint32_t kv_heads = 1;  // query head h reads kv head h / (heads / kv_heads)
  bool causal = true;          // query i sees keys j <= i only
};

// q [B, S, H hd], k and v [B, S, KV hd] -> [B, S, H hd]. Per sample, query head h and query
// i, in the accumulation format: s_j = (chain over d of q[i, d] k[j, d]) x scale, scale the
// double 1/sqrt(hd) rounded once; p = softmax over the visible j (masked keys are skipped);
// out[i, d] = chain over visible j of p_j v[j, d], rounded once to the storage format.
Tensor attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionShape& a);

struct AttentionGrads {
  Tensor dq, dk, dv;  // storage format
};
// The probabilities are recomputed as in the forward. dk and dv of a kv head are one chain
// over its query heads (increasing), then over queries i (increasing), rounded once.
AttentionGrads attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout,
                                  const AttentionShape& a);

}  // namespace wafersim::models::reference

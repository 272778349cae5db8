#pragma once
// The values of a run: parameters and gradient seeds drawn from the seed, model inputs, and
// the conversion between a host tensor ([token][feature] element bits) and the per-PE buffers
// of the streaming layout.

#include <cstdint>
#include <vector>

#include "models/compiler/compiled_model.h"
#include "sim/splitmix64.h"

namespace wafersim::platforms::runtime {

// Element bits of a tensor: [token][feature] (features 0: one id per token), or a host
// tensor's elements in row-major order.
using Bits = std::vector<std::uint32_t>;

struct HostData {
  std::vector<Bits> host;                               // per CompiledModel::host_tensors (gradients: fp32, zero)
  std::vector<std::pair<std::uint32_t, Bits>> preload;  // wafer tensors the host loads before the first step
};

// Deterministic in `seed`: parameters uniform in +-1/sqrt(fan-in), activations and gradient
// seeds uniform in [-1, 1), token ids and labels uniform below the vocabulary.
HostData make_host_data(const models::compiler::CompiledModel& cm, std::uint64_t seed);

// The bytes PE (column x, slice s) holds of a tensor, and back.
std::vector<std::uint8_t> pe_bytes(const models::compiler::CompiledModel& cm, const models::compiler::Tensor& t,
                                   const Bits& v, std::uint32_t x, std::uint32_t s);
void from_pe_bytes(const models::compiler::CompiledModel& cm, const models::compiler::Tensor& t,
                   const std::vector<std::uint8_t>& b, std::uint32_t x, std::uint32_t s, Bits& v);
// Bytes of tensor t on PE (x, s) (its slice).
std::uint32_t pe_size(const models::compiler::CompiledModel& cm, const models::compiler::Tensor& t, std::uint32_t s);

// The host's data generator: sim::SplitMix64 with integers below n by remainder.
class Random : public sim::SplitMix64 {
 public:
  using sim::SplitMix64::SplitMix64;
  std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }
};

}  // namespace wafersim::platforms::runtime

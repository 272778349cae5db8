#pragma once
// The values of a run: parameters and gradient seeds drawn from the seed, model inputs, and
// the conversion between a host tensor ([token][feature] element bits) and the per-PE buffers
// of the streaming layout.

#include <cstdint>
#include <vector>

#include "models/compiler/compiled_model.h"

namespace wafersim::models::runtime {

// Element bits of a tensor: [token][feature] (features 0: one id per token), or a host
// tensor's elements in row-major order.
using Bits = std::vector<std::uint32_t>;

struct HostData {
  std::vector<Bits> host;                               // per CompiledModel::host_tensors (gradients: fp32, zero)
  std::vector<std::pair<std::uint32_t, Bits>> preload;  // wafer tensors the host loads before the first step
};

// Deterministic in `seed`: parameters uniform in +-1/sqrt(fan-in), activations and gradient
// seeds uniform in [-1, 1), token ids and labels uniform below the vocabulary.
HostData make_host_data(const compiler::CompiledModel& cm, std::uint64_t seed);

// The bytes PE (column x, slice s) holds of a tensor, and back.
std::vector<std::uint8_t> pe_bytes(const compiler::CompiledModel& cm, const compiler::Tensor& t, const Bits& v,
                                   std::uint32_t x, std::uint32_t s);
void from_pe_bytes(const compiler::CompiledModel& cm, const compiler::Tensor& t, const std::vector<std::uint8_t>& b,
                   std::uint32_t x, std::uint32_t s, Bits& v);
// Bytes of tensor t on PE (x, s) (its slice).
std::uint32_t pe_size(const compiler::CompiledModel& cm, const compiler::Tensor& t, std::uint32_t s);

// A small deterministic generator (splitmix64).
class Random {
 public:
  explicit Random(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)
  std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }

 private:
  std::uint64_t s_;
};

}  // namespace wafersim::models::runtime

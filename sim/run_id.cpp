#include "sim/run_id.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <random>

#include "sim/splitmix64.h"

namespace wafersim::sim {

const std::string& run_id() {
  static const std::string id = [] {
    std::random_device device;
    std::uint64_t seed = (std::uint64_t{device()} << 32) ^ device();
    seed ^= static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    seed ^= static_cast<std::uint64_t>(::getpid()) << 17;
    SplitMix64 mix(seed);
    return fmt::format("{:016x}", mix.next());
  }();
  return id;
}

}  // namespace wafersim::sim

#pragma once
// A PE core array on a platform (`tiny` by default), wired to a FakeFabric and ticked by hand.

#include <cstring>
#include <string>
#include <vector>

#include "hw/core/core_array.h"
#include "hw/isa/assembler.h"
#include "platforms/platform_spec.h"
#include "tests/support/fake_fabric.h"
#include "tests/support/manual_engine.h"

namespace wafersim::test {

struct CoreRig {
  explicit CoreRig(const std::vector<std::string>& overrides = {}, bool sleep = true, bool timing_only = false,
                   const std::string& platform = "tiny")
      : spec(platforms::load_platform(platform, overrides).spec),
        cores("cores", spec.wafer, hw::CoreArrayOptions{spec.fabric.colors, sleep, timing_only}),
        fabric(&cores) {
    cores.connect([this](hw::PeCoord p) { return fabric.port(p); });
    engine.add(&cores);
    engine.add(&fabric);
  }
  void load(const std::string& text) {
    for (const auto& p : hw::isa::assemble(text, "t.s")) cores.load(p);
  }
  // Ticks until no core and no wavelet has anything left to do; returns the cycles ticked.
  std::uint64_t run(std::uint64_t limit = 1'000'000) {
    return engine.run([this] { return cores.next_wake().is_never() && fabric.idle(); }, limit);
  }
  // Ticks every cycle before `c` (so cycle c - 1 is the last one ticked).
  void run_to(std::uint64_t c) { engine.run_to(sim::Cycle(c)); }
  const hw::Core& core(unsigned x = 0, unsigned y = 0) const {
    return *cores.find(hw::PeCoord{static_cast<std::uint16_t>(x), static_cast<std::uint16_t>(y)});
  }
  std::uint32_t reg(unsigned r, unsigned x = 0, unsigned y = 0) const { return core(x, y).reg(r); }
  const hw::CoreCounters& counters(unsigned x = 0, unsigned y = 0) const { return core(x, y).counters(); }
  std::uint64_t stall(hw::Stall s, unsigned x = 0, unsigned y = 0) const {
    return counters(x, y).stall[static_cast<int>(s)];
  }
  std::uint32_t word(std::uint32_t addr, unsigned bytes, unsigned x = 0, unsigned y = 0) const {
    return core(x, y).sram().load(addr, bytes);
  }
  float f32(std::uint32_t addr, unsigned x = 0, unsigned y = 0) const {
    const std::uint32_t b = word(addr, 4, x, y);
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }

  platforms::PlatformSpec spec;
  hw::CoreArray cores;
  FakeFabric fabric;
  ManualEngine engine;
};

}  // namespace wafersim::test

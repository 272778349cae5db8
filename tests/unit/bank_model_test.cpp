// The SRAM's port budget of one cycle (hw::PortCycle over hw::BankModel): the port and bank
// limits, and that a cycle's accesses all moved by one number of words fare as before.

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "hw/pe_config.h"
#include "hw/sram/bank_model.h"

namespace wafersim::test::bank_model_test {
namespace {

using Result = hw::PortCycle::Result;

hw::SramConfig sram(std::uint32_t banks, std::uint64_t bank_bits, std::uint64_t port_bits) {
  hw::SramConfig c;
  c.size = units::DataSize{std::uint64_t{48} * 1024 * 8};
  c.banks = banks;
  c.bank_width = units::DataSize{bank_bits};
  c.port_width = units::DataSize{port_bits};
  return c;
}

struct Access {
  std::uint32_t word;
  bool write;
};

std::vector<Result> outcomes(const hw::BankModel& m, const std::vector<Access>& cycle, std::int64_t shift) {
  hw::PortCycle port(m);
  std::vector<Result> out;
  for (const Access& a : cycle) {
    const auto w = static_cast<std::uint32_t>(a.word + shift);
    out.push_back(a.write ? port.write(w) : port.read(w));
  }
  return out;
}

// 8 banks of 32 bits and 64-bit ports (the default): a word spans two banks, so words four
// apart conflict; a second read of a word merges; two read ports and one write port.
TEST(BankModel, ThePortsAndBanksOfOneCycle) {
  const hw::BankModel m(sram(8, 32, 64));
  EXPECT_EQ(m.word_bytes(), 8u);
  EXPECT_EQ(m.banks_of_word(0), 0x03u);
  EXPECT_EQ(m.banks_of_word(5), 0x0cu);
  EXPECT_EQ(outcomes(m, {{3, false}, {3, false}, {7, false}, {8, false}, {2, false}}, 0),
            (std::vector<Result>{Result::Ok, Result::Merged, Result::BankBusy, Result::Ok, Result::NoPort}));
  EXPECT_EQ(outcomes(m, {{4, true}, {5, true}, {4, false}}, 0),
            (std::vector<Result>{Result::Ok, Result::NoPort, Result::Ok}));
}

// Random cycles of up to six accesses over a few bank layouts (banks a power of two or not, a
// word spanning one to three banks): every shift leaves each access's outcome as it was.
TEST(BankModel, ACycleShiftedByWholeWordsHasTheSameOutcomes) {
  std::mt19937 rng(7);
  const hw::SramConfig configs[] = {sram(8, 32, 64), sram(6, 32, 64), sram(16, 16, 128), sram(5, 32, 96),
                                    sram(4, 64, 64)};
  for (const hw::SramConfig& c : configs) {
    hw::SramConfig ports = c;
    ports.read_ports = 3;
    ports.write_ports = 2;
    const hw::BankModel m(ports);
    for (int trial = 0; trial < 2000; ++trial) {
      std::vector<Access> cycle(1 + rng() % 6);
      for (Access& a : cycle) a = {static_cast<std::uint32_t>(1000 + rng() % 24), rng() % 3 == 0};
      const std::vector<Result> base = outcomes(m, cycle, 0);
      for (const std::int64_t shift : {1, 2, 3, 5, 7, 13, -1, -4, -999})
        ASSERT_EQ(outcomes(m, cycle, shift), base) << c.banks << " banks, shift " << shift << ", trial " << trial;
    }
  }
}

}  // namespace
}  // namespace wafersim::test::bank_model_test

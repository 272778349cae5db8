#include "hw/sram/bank_model.h"

namespace wafersim::hw {

BankModel::BankModel(const SramConfig& c)
    : word_bytes_(static_cast<std::uint32_t>(c.port_width.bits / 8)),
      read_ports_(c.read_ports),
      write_ports_(c.write_ports) {
  for (int k = 0; k < 31; ++k)
    if ((1u << k) == word_bytes_) word_shift_ = k;
  const auto span = static_cast<std::uint32_t>(c.port_width.bits / c.bank_width.bits);
  masks_.resize(c.banks);
  for (std::uint32_t w = 0; w < c.banks; ++w) {
    std::uint64_t m = 0;
    for (std::uint32_t j = 0; j < span; ++j) m |= std::uint64_t{1} << ((w * span + j) % c.banks);
    masks_[w] = m;
  }
  if (c.banks > 1 && (c.banks & (c.banks - 1)) == 0) bank_index_mask_ = c.banks - 1;
}

}  // namespace wafersim::hw

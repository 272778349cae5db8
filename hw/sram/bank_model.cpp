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
}

void PortCycle::reset() {
  reads_ = writes_ = 0;
  read_banks_ = write_banks_ = 0;
}

PortCycle::Result PortCycle::read(std::uint32_t word) {
  for (std::uint32_t i = 0; i < reads_ && i < kMaxMerged; ++i)
    if (read_words_[i] == word) return Result::Merged;
  if (reads_ >= model_->read_ports()) return Result::NoPort;
  const std::uint64_t banks = model_->banks_of_word(word);
  if (read_banks_ & banks) return Result::BankBusy;
  read_banks_ |= banks;
  if (reads_ < kMaxMerged) read_words_[reads_] = word;
  ++reads_;
  return Result::Ok;
}

PortCycle::Result PortCycle::write(std::uint32_t word) {
  if (writes_ >= model_->write_ports()) return Result::NoPort;
  const std::uint64_t banks = model_->banks_of_word(word);
  if (write_banks_ & banks) return Result::BankBusy;
  write_banks_ |= banks;
  ++writes_;
  return Result::Ok;
}

}  // namespace wafersim::hw

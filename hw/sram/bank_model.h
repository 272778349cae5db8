#pragma once
// The timing side of a PE's SRAM: which banks a port access occupies, and the budget of
// ports and banks that all accesses of one cycle share.

#include <cstdint>
#include <vector>

#include "hw/pe_config.h"

namespace wafersim::hw {

// Contract (an assumption, see docs/isa.md "SRAM"): memory is `banks` banks of
// `bank_width`, interleaved word by word. A port access moves one aligned port word
// (`port_width`), which spans port_width / bank_width consecutive banks. In one cycle:
// at most `read_ports` reads and `write_ports` writes; banks are single-ported for reads,
// so two reads of different words that share a bank conflict and the second waits a cycle
// (two reads of the same word merge into one access); writes are posted through a write
// buffer and conflict only with other writes of the same cycle. Banks interleave word by word,
// so adding one number to every word a cycle accesses leaves which of them merge and which
// conflict as they were (Core::run_ahead_vector takes steps that repeat one shifted at once).
class BankModel {
 public:
  explicit BankModel(const SramConfig& c);

  [[nodiscard]] std::uint32_t word_bytes() const { return word_bytes_; }
  // The port word holding byte address `addr`.
  [[nodiscard]] std::uint32_t word_of(std::uint32_t addr) const {
    return word_shift_ >= 0 ? addr >> word_shift_ : addr / word_bytes_;
  }
  [[nodiscard]] std::uint32_t read_ports() const { return read_ports_; }
  [[nodiscard]] std::uint32_t write_ports() const { return write_ports_; }
  [[nodiscard]] std::uint64_t banks_of_word(std::uint32_t word) const {
    return masks_[bank_index_mask_ ? word & bank_index_mask_ : word % masks_.size()];
  }

 private:
  std::uint32_t word_bytes_;
  int word_shift_ = -1;  // log2(word_bytes_) when a power of two
  std::uint32_t read_ports_, write_ports_;
  std::vector<std::uint64_t> masks_;   // bank mask by word index modulo the number of banks
  std::uint32_t bank_index_mask_ = 0;  // banks - 1 when a power of two above 1 (no division)
};

// One PE's SRAM port budget in one cycle.
class PortCycle {
 public:
  enum class Result { Ok, Merged, NoPort, BankBusy };  // Merged: the word was read this cycle already

  explicit PortCycle(const BankModel& m) : model_(&m), read_ports_(m.read_ports()), write_ports_(m.write_ports()) {
    reset();
  }
  // Inline: called for every port access of every vector step.
  void reset() {
    reads_ = writes_ = 0;
    read_banks_ = write_banks_ = 0;
  }
  Result read(std::uint32_t word) {
    for (std::uint32_t i = 0; i < reads_ && i < kMaxMerged; ++i)
      if (read_words_[i] == word) return Result::Merged;
    if (reads_ >= read_ports_) return Result::NoPort;
    const std::uint64_t banks = model_->banks_of_word(word);
    if (read_banks_ & banks) return Result::BankBusy;
    read_banks_ |= banks;
    if (reads_ < kMaxMerged) read_words_[reads_] = word;
    ++reads_;
    return Result::Ok;
  }
  Result write(std::uint32_t word) {
    if (writes_ >= write_ports_) return Result::NoPort;
    const std::uint64_t banks = model_->banks_of_word(word);
    if (write_banks_ & banks) return Result::BankBusy;
    write_banks_ |= banks;
    ++writes_;
    return Result::Ok;
  }

 private:
  const BankModel* model_;
  std::uint32_t read_ports_, write_ports_;  // the model's, kept here (read for every access)
  std::uint32_t reads_ = 0, writes_ = 0;
  std::uint64_t read_banks_ = 0, write_banks_ = 0;
  static constexpr int kMaxMerged = 16;
  std::uint32_t read_words_[kMaxMerged] = {};
};

}  // namespace wafersim::hw

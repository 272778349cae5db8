#pragma once
// An ordered list of a core's vector-operation slots held inside the core (no heap block of
// its own), so that a sweep over many cores reaches it with the core's own cache lines.

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace wafersim::hw {

// Contract: at most kCapacity slots (a core has at most 1 + 63 microthread slots); the
// vector-like operations keep the order of the slots as inserted.
class SlotList {
 public:
  static constexpr std::size_t kCapacity = 64;
  using iterator = std::uint8_t*;
  using const_iterator = const std::uint8_t*;

  [[nodiscard]] std::size_t size() const { return n_; }
  [[nodiscard]] bool empty() const { return n_ == 0; }
  [[nodiscard]] std::uint8_t operator[](std::size_t i) const { return s_[i]; }
  [[nodiscard]] const std::uint8_t* data() const { return s_.data(); }
  iterator begin() { return s_.data(); }
  iterator end() { return s_.data() + n_; }
  [[nodiscard]] const_iterator begin() const { return s_.data(); }
  [[nodiscard]] const_iterator end() const { return s_.data() + n_; }

  void clear() { n_ = 0; }
  void push_back(std::uint8_t slot) {
    if (n_ == kCapacity) throw std::logic_error("SlotList: more than 64 slots");
    s_[n_++] = slot;
  }
  // Inserts before `at`, shifting the later slots up.
  void insert(const_iterator at, std::uint8_t slot) {
    if (n_ == kCapacity) throw std::logic_error("SlotList: more than 64 slots");
    const auto i = static_cast<std::size_t>(at - s_.data());
    for (std::size_t k = n_; k > i; --k) s_[k] = s_[k - 1];
    s_[i] = slot;
    ++n_;
  }
  void erase(const_iterator at) {
    const auto i = static_cast<std::size_t>(at - s_.data());
    for (std::size_t k = i + 1; k < n_; ++k) s_[k - 1] = s_[k];
    --n_;
  }

 private:
  std::array<std::uint8_t, kCapacity> s_{};
  std::uint8_t n_ = 0;
};

}  // namespace wafersim::hw

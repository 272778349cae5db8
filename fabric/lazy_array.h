#pragma once
// An array of a fixed number of elements whose memory the OS commits page by page when first
// touched: address space reserved up front (no swap reserved), so that state kept for every
// router of a wafer costs only what the routers in use touch, and every element sits at a
// fixed place (a parallel sweep indexes it without a lock: nothing ever moves).
//
// Contract: elements read as all-zero bytes until written, so T's zero bytes must be a valid
// state (the owners build what is not: BlockRouters builds a tile's blocks); T is trivially
// destructible (nothing is destroyed when the array goes).

#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace wafersim::fabric {

template <class T>
class LazyArray {
  static_assert(std::is_trivially_destructible_v<T>, "LazyArray destroys nothing");

 public:
  LazyArray() = default;
  explicit LazyArray(std::size_t n) : size_(n) {
    if (n == 0) return;
    void* p = mmap(nullptr, bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<T*>(p);
  }
  ~LazyArray() { release(); }
  LazyArray(const LazyArray&) = delete;
  LazyArray& operator=(const LazyArray&) = delete;
  LazyArray(LazyArray&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  LazyArray& operator=(LazyArray&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }

  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  [[nodiscard]] T* data() { return data_; }
  [[nodiscard]] const T* data() const { return data_; }
  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  [[nodiscard]] std::size_t bytes() const { return size_ * sizeof(T); }
  void release() {
    if (data_) munmap(data_, bytes());
    data_ = nullptr;
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace wafersim::fabric

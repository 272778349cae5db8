#pragma once
// An allocator whose storage starts on a cache line, so arrays laid out in 64-byte groups
// (a router's queues of one port, a queue's wavelet buffer) touch as few lines as possible.

#include <cstddef>
#include <new>

namespace wafersim::fabric {

template <class T>
struct CacheAligned {
  using value_type = T;
  static constexpr std::align_val_t kLine{64};

  CacheAligned() = default;
  template <class U>
  explicit CacheAligned(const CacheAligned<U>& /*other*/) {}

  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kLine)); }
  void deallocate(T* p, std::size_t /*n*/) { ::operator delete(p, kLine); }

  template <class U>
  bool operator==(const CacheAligned<U>& /*other*/) const {
    return true;
  }
  template <class U>
  bool operator!=(const CacheAligned<U>& /*other*/) const {
    return false;
  }
};

}  // namespace wafersim::fabric

#pragma once
// Bytes of a message between ranks (sim/parallel/transport.h): fixed-width integers and
// floats in the host's byte order (every rank of a run runs the same build on the same kind
// of host), length-prefixed sequences. A Reader past its message's end throws.

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace wafersim::sim::parallel {

class Writer {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &v, sizeof(T));
  }
  template <typename T>
  void put_vector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<std::uint64_t>(v.size());
    const auto at = bytes_.size();
    bytes_.resize(at + v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(bytes_.data() + at, v.data(), v.size() * sizeof(T));
  }
  void put_string(const std::string& s) {
    put<std::uint64_t>(s.size());
    bytes_ += s;
  }
  [[nodiscard]] const std::string& bytes() const { return bytes_; }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  template <typename T>
  std::vector<T> get_vector() {
    const auto n = get<std::uint64_t>();
    if (n > (bytes_.size() - at_) / sizeof(T)) throw std::runtime_error("wire: a sequence past the message's end");
    std::vector<T> v(n);
    if (n) std::memcpy(v.data(), take(n * sizeof(T)), n * sizeof(T));
    return v;
  }
  std::string get_string() {
    const auto n = get<std::uint64_t>();
    return std::string(take(n), n);
  }
  [[nodiscard]] bool done() const { return at_ == bytes_.size(); }

 private:
  const char* take(std::size_t n) {
    if (n > bytes_.size() - at_) throw std::runtime_error("wire: read past the message's end");
    const char* p = bytes_.data() + at_;
    at_ += n;
    return p;
  }
  const std::string& bytes_;
  std::size_t at_ = 0;
};

}  // namespace wafersim::sim::parallel

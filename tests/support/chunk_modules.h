#pragma once
// Test drivers for chunk links: a source that sends prepared chunks as fast as its links and
// credits allow, and a sink that frees every chunk the moment it arrives and records it.

#include <systemc>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/picos.h"
#include "sim/stream/chunk_link.h"

namespace wafersim::test {

using sim::Picos;
using sim::stream::Chunk;
using sim::stream::ChunkInfo;
using sim::stream::Pass;

// Cuts `bytes` of one layer into chunks of `chunk_bytes`, chunk i on plane i % planes.
// `value(element)` gives FP32 values when set (functional), else the chunks carry none.
inline std::vector<std::vector<Chunk>> make_chunks(std::uint64_t bytes, std::uint64_t chunk_bytes, std::uint32_t planes,
                                                   Pass pass, const std::function<float(std::uint64_t)>& value = {}) {
  std::vector<std::vector<Chunk>> out(planes);
  const std::uint32_t n = sim::stream::chunk_count(bytes, chunk_bytes);
  for (std::uint32_t i = 0; i < n; ++i) {
    Chunk c;
    c.info.pass = pass;
    c.info.index = i;
    c.info.count = n;
    c.info.offset = std::uint64_t{i} * chunk_bytes;
    c.info.bytes = sim::stream::chunk_size(bytes, chunk_bytes, i);
    if (value) {
      auto v = std::make_shared<std::vector<float>>(c.info.bytes / 4);
      for (std::size_t k = 0; k < v->size(); ++k) (*v)[k] = value(c.info.offset / 4 + k);
      c.data = v;
    }
    out[i % planes].push_back(c);
  }
  return out;
}

class ChunkSource : public sc_core::sc_module {
 public:
  ChunkSource(const sc_core::sc_module_name& name, units::Bandwidth bw, std::vector<std::vector<Chunk>> per_plane)
      : sc_core::sc_module(name), chunks_(std::move(per_plane)), next_(chunks_.size(), 0) {
    for (std::size_t p = 0; p < chunks_.size(); ++p)
      out_.push_back(std::make_unique<sim::stream::ChunkOutPort>("out" + std::to_string(p), bw,
                                                                 [this] { wake_.notify(sc_core::SC_ZERO_TIME); }));
    SC_HAS_PROCESS(ChunkSource);
    SC_METHOD(run);
    sensitive << wake_;
  }
  sim::stream::ChunkOutPort& out(std::size_t plane) { return *out_.at(plane); }

 private:
  void run() {
    const Picos now = sim::now();
    Picos next = Picos::never();
    for (std::size_t p = 0; p < out_.size(); ++p) {
      auto& o = *out_[p];
      o.advance(now);
      if (o.can_send() && next_[p] < chunks_[p].size()) o.send(chunks_[p][next_[p]++], now, Picos(0));
      next = std::min(next, o.done_at());
    }
    if (!next.is_never()) wake_.notify(sim::to_sc_time(next - now));
  }
  std::vector<std::vector<Chunk>> chunks_;
  std::vector<std::size_t> next_;
  std::vector<std::unique_ptr<sim::stream::ChunkOutPort>> out_;
  sc_core::sc_event wake_;
};

class ChunkSink : public sc_core::sc_module {
 public:
  struct Arrival {
    Chunk chunk;
    Picos at;
  };
  ChunkSink(const sc_core::sc_module_name& name, std::size_t planes, std::uint32_t capacity)
      : sc_core::sc_module(name) {
    for (std::size_t p = 0; p < planes; ++p)
      in_.push_back(std::make_unique<sim::stream::ChunkInPort>("in" + std::to_string(p), capacity,
                                                               [this](const sim::stream::ChunkInPort::Entry& e) {
                                                                 arrivals.push_back(Arrival{e.chunk, e.arrival});
                                                                 wake_.notify(sc_core::SC_ZERO_TIME);
                                                               }));
    SC_HAS_PROCESS(ChunkSink);
    SC_METHOD(run);
    sensitive << wake_;
    dont_initialize();
  }
  sim::stream::ChunkInPort& in(std::size_t plane) { return *in_.at(plane); }
  [[nodiscard]] std::uint64_t bytes() const {
    std::uint64_t b = 0;
    for (const auto& a : arrivals) b += a.chunk.info.bytes;
    return b;
  }
  [[nodiscard]] Picos last() const {
    Picos t{0};
    for (const auto& a : arrivals) t = std::max(t, a.at);
    return t;
  }
  // The FP32 values received, placed at their offsets (n values in all).
  [[nodiscard]] std::vector<float> values(std::size_t n) const {
    std::vector<float> v(n);
    for (const auto& a : arrivals)
      for (std::size_t k = 0; k < a.chunk.data->size(); ++k) v[a.chunk.info.offset / 4 + k] = (*a.chunk.data)[k];
    return v;
  }
  std::vector<Arrival> arrivals;

 private:
  void run() {
    for (auto& in : in_)
      while (!in->empty()) in->pop();
  }
  std::vector<std::unique_ptr<sim::stream::ChunkInPort>> in_;
  sc_core::sc_event wake_;
};

}  // namespace wafersim::test

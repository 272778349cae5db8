#pragma once
// A queue of wavelets held as the mesh holds its router and receive queues: the head in the
// queue's record (`front`), those behind it in a ring of `depth` flits at offset `buf` of a
// shared array, allocated when a second wavelet queues (most queues never hold more than one).
// Queue: a record with front, buf (kNoRing until allocated), head (the ring position
// of the wavelet behind the head) and count.

#include <cstdint>

#include "fabric/flit.h"

namespace wafersim::fabric::ring_queue {

constexpr std::uint32_t kNoRing = 0xffffffffu;

// Where in q's ring the i-th wavelet of q is (i >= 1; 0 is the head, in q.front).
template <class Queue>
inline std::uint32_t position(const Queue& q, std::uint32_t i, std::uint32_t depth) {
  const std::uint32_t pos = q.head + i - 1u;
  return pos >= depth ? pos - depth : pos;
}

// Queues `f` at the tail of q (its ring in `ring`, a vector of flits).
template <class Queue, class Ring>
inline void enqueue(Queue& q, Flit f, Ring& ring, std::uint32_t depth) {
  if (q.count == 0) {
    q.front = f;
  } else {
    if (q.buf == kNoRing) {
      q.buf = static_cast<std::uint32_t>(ring.size());
      ring.resize(ring.size() + depth);
    }
    ring[q.buf + position(q, q.count, depth)] = f;
  }
  ++q.count;
}

// After a pop that left q nonempty (its count already lowered): the wavelet behind the old head
// moves from the ring (at `ring` + q.buf) to q.front.
template <class Queue>
inline void advance(Queue& q, const Flit* ring, std::uint32_t depth) {
  q.front = ring[q.buf + q.head];
  q.head = static_cast<std::uint16_t>(q.head + 1u == depth ? 0u : q.head + 1u);
}

}  // namespace wafersim::fabric::ring_queue

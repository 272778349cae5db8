#pragma once
// A chunk link: a sender port that serialises chunks at a bandwidth and a receiver port with
// a bounded buffer, joined by TLM-2.0 sockets (base protocol, non-blocking transport) with
// credit-based back-pressure. Owners are modules with one SC_METHOD that re-arms itself; the
// ports only keep state and call the owner's wake function.

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <systemc>
#include <tlm>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/picos.h"
#include "sim/stats/stats.h"
#include "sim/stream/chunk.h"
#include "sim/stream/chunk_observer.h"
#include "sim/units/quantity.h"

namespace wafersim::sim::stream {

class ChunkOutPort;

// The receiving end of a link: a FIFO of at most `capacity` chunks.
// Contract: a chunk arrives (nb_transport_fw, BEGIN_REQ, zero delay) at the SystemC time its
// last byte arrives; the port stores it and answers END_REQ at once (TLM_UPDATED). When the
// owner pop()s a chunk its slot is free again: the port sends BEGIN_RESP on the backward
// path, which returns one credit to the sender. Senders never exceed `capacity` outstanding
// chunks, so an arrival never finds the buffer full (that would be a simulator bug).
class ChunkInPort {
 public:
  struct Entry {
    Chunk chunk;
    Picos arrival;
    tlm::tlm_generic_payload* trans = nullptr;
  };
  // `on_arrival` runs inside the sender's process: it may record and notify, never send.
  ChunkInPort(const std::string& name, std::uint32_t capacity, std::function<void(const Entry&)> on_arrival);
  ChunkInPort(const ChunkInPort&) = delete;
  ChunkInPort& operator=(const ChunkInPort&) = delete;

  tlm_utils::simple_target_socket<ChunkInPort> socket;

  [[nodiscard]] std::uint32_t capacity() const { return capacity_; }
  [[nodiscard]] bool empty() const { return fifo_.empty(); }
  [[nodiscard]] std::size_t size() const { return fifo_.size(); }
  [[nodiscard]] const Entry& front() const { return fifo_.front(); }
  [[nodiscard]] const Entry& at(std::size_t i) const { return fifo_.at(i); }
  // Frees the oldest slot (one credit back to the sender).
  void pop();

  [[nodiscard]] const std::string& name() const { return name_; }
  // Adds this port's counters to `g` (chunks, bytes, peak occupancy).
  void add_stats(stats::Group& g) const;
  [[nodiscard]] std::uint64_t chunks() const { return chunks_; }
  [[nodiscard]] std::uint64_t bytes() const { return bytes_; }
  [[nodiscard]] std::uint64_t peak_occupancy() const { return peak_; }

 private:
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  std::string name_;
  std::uint32_t capacity_;
  std::function<void(const Entry&)> on_arrival_;
  std::deque<Entry> fifo_;
  std::uint64_t chunks_ = 0, bytes_ = 0, peak_ = 0;
};

// The sending end of a link: serialises one chunk at a time at its bandwidth.
// Contract: send() starts a chunk at `now` (requires can_send(): idle and one credit); the
// chunk occupies the link for transfer_time(bytes, bandwidth) and is delivered when the
// owner calls advance(now) at or after done_at(); the owner must wake at done_at(). A credit
// comes back when the receiver frees the slot; `on_credit` then runs (inside the receiver's
// process: it may only notify).
class ChunkOutPort {
 public:
  ChunkOutPort(const std::string& name, units::Bandwidth bandwidth, std::function<void()> on_credit);
  ChunkOutPort(const ChunkOutPort&) = delete;
  ChunkOutPort& operator=(const ChunkOutPort&) = delete;

  tlm_utils::simple_initiator_socket<ChunkOutPort> socket;

  // Binds this port's socket to `receiver` and takes one credit per receiver slot.
  void connect(ChunkInPort& receiver);

  [[nodiscard]] bool idle() const { return !busy_; }
  [[nodiscard]] bool can_send() const { return !busy_ && credits_ > 0; }
  [[nodiscard]] std::uint32_t credits() const { return credits_; }
  // Starts `chunk` now; `ready_at` is when the owner had it ready (waiting for a credit after
  // both the chunk and the link were ready counts as back-pressure). Returns done_at().
  Picos send(Chunk chunk, Picos now, Picos ready_at);
  // Delivers the chunk in flight if its last byte has arrived by `now`; true if it did.
  bool advance(Picos now);
  [[nodiscard]] Picos done_at() const { return busy_ ? done_at_ : Picos::never(); }
  [[nodiscard]] units::Bandwidth bandwidth() const { return bandwidth_; }
  [[nodiscard]] Picos serialization(std::uint64_t bytes) const { return transfer_time(bytes, bandwidth_); }

  [[nodiscard]] const std::string& name() const { return name_; }
  // Tracing: `observer` sees every chunk this link starts (null: none). Throws
  // std::logic_error when the build has no tracing hooks (WAFERSIM_TRACE_HOOKS=OFF).
  void set_observer(ChunkObserver* observer);
  // Adds this link's counters to `g` (chunks, bytes, busy and back-pressure time).
  void add_stats(stats::Group& g) const;
  [[nodiscard]] std::uint64_t chunks() const { return chunks_; }
  [[nodiscard]] std::uint64_t bytes() const { return bytes_; }
  [[nodiscard]] std::uint64_t busy_ps() const { return busy_ps_; }
  [[nodiscard]] std::uint64_t blocked_ps() const { return blocked_ps_; }

 private:
  struct Slot {
    tlm::tlm_generic_payload trans;
    ChunkExtension* ext = nullptr;
  };
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);

  std::string name_;
  units::Bandwidth bandwidth_;
  std::function<void()> on_credit_;
  ChunkObserver* observer_ = nullptr;
  std::uint32_t credits_ = 0;
  bool connected_ = false;
  bool busy_ = false;
  Picos done_at_{0};
  Picos free_since_{0};
  Slot* in_flight_ = nullptr;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<Slot*> free_slots_;
  std::uint64_t chunks_ = 0, bytes_ = 0, busy_ps_ = 0, blocked_ps_ = 0;
};

}  // namespace wafersim::sim::stream

#include "sim/stream/chunk_link.h"

#include <algorithm>
#include <stdexcept>

#include "sim/errors.h"

namespace wafersim::sim::stream {
namespace {

void require_ps_resolution() {
  if (sc_core::sc_get_time_resolution() != sc_core::sc_time(1, sc_core::SC_PS))
    throw std::logic_error("chunk links need the SystemC time resolution to be 1 ps");
}

}  // namespace

ChunkInPort::ChunkInPort(const std::string& name, std::uint32_t capacity, std::function<void(const Entry&)> on_arrival)
    : socket((name + "_socket").c_str()), name_(name), capacity_(capacity), on_arrival_(std::move(on_arrival)) {
  if (capacity_ == 0) throw std::logic_error("ChunkInPort " + name + ": capacity 0");
  socket.register_nb_transport_fw(this, &ChunkInPort::nb_transport_fw);
}

tlm::tlm_sync_enum ChunkInPort::nb_transport_fw(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                                sc_core::sc_time& /*delay*/) {
  if (phase != tlm::BEGIN_REQ) throw std::logic_error("ChunkInPort " + name_ + ": unexpected phase");
  if (fifo_.size() >= capacity_)
    throw SimulationError("chunk link into " + name_ + ": a chunk arrived with the buffer full (no credit)");
  auto* ext = trans.get_extension<ChunkExtension>();
  if (ext == nullptr) throw std::logic_error("ChunkInPort " + name_ + ": payload without a ChunkExtension");
  fifo_.push_back(Entry{ext->chunk, sim::now(), &trans});
  ++chunks_;
  bytes_ += ext->chunk.info.bytes;
  peak_ = std::max<std::uint64_t>(peak_, fifo_.size());
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
  phase = tlm::END_REQ;
  if (on_arrival_) on_arrival_(fifo_.back());
  return tlm::TLM_UPDATED;
}

void ChunkInPort::pop() {
  if (fifo_.empty()) throw std::logic_error("ChunkInPort " + name_ + ": pop on an empty buffer");
  tlm::tlm_generic_payload* trans = fifo_.front().trans;
  fifo_.pop_front();
  tlm::tlm_phase phase = tlm::BEGIN_RESP;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  tlm::tlm_sync_enum r = socket->nb_transport_bw(*trans, phase, delay);
  if (r != tlm::TLM_COMPLETED) throw std::logic_error("ChunkInPort " + name_ + ": sender did not complete");
}

void ChunkInPort::add_stats(stats::Group& g) const {
  g.counter("chunks", &chunks_, "chunks", "chunks received");
  g.counter("bytes", &bytes_, "B", "bytes received");
  g.counter("peak_occupancy", &peak_, "chunks", "most chunks buffered at once");
  g.formula(
      "capacity", [this] { return static_cast<double>(capacity_); }, "chunks", "buffer slots", true);
}

ChunkOutPort::ChunkOutPort(const std::string& name, units::Bandwidth bandwidth, std::function<void()> on_credit)
    : socket((name + "_socket").c_str()), name_(name), bandwidth_(bandwidth), on_credit_(std::move(on_credit)) {
  require_ps_resolution();
  socket.register_nb_transport_bw(this, &ChunkOutPort::nb_transport_bw);
}

void ChunkOutPort::connect(ChunkInPort& receiver) {
  if (connected_) throw std::logic_error("ChunkOutPort " + name_ + ": connected twice");
  socket.bind(receiver.socket);
  credits_ = receiver.capacity();
  connected_ = true;
}

Picos ChunkOutPort::send(Chunk chunk, Picos now, Picos ready_at) {
  if (!can_send()) throw std::logic_error("ChunkOutPort " + name_ + ": send without an idle link and a credit");
  if (free_slots_.empty()) {
    slots_.push_back(std::make_unique<Slot>());
    Slot* s = slots_.back().get();
    s->ext = new ChunkExtension;
    s->trans.set_extension(s->ext);
    free_slots_.push_back(s);
  }
  Slot* s = free_slots_.back();
  free_slots_.pop_back();
  const std::uint32_t bytes = chunk.info.bytes;
  s->trans.set_command(tlm::TLM_WRITE_COMMAND);
  s->trans.set_address(chunk.info.offset);
  s->trans.set_data_ptr(chunk.data ? reinterpret_cast<unsigned char*>(const_cast<float*>(chunk.data->data()))
                                   : nullptr);
  s->trans.set_data_length(bytes);
  s->trans.set_streaming_width(bytes);
  s->trans.set_byte_enable_ptr(nullptr);
  s->trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  s->ext->chunk = std::move(chunk);
#ifndef WAFERSIM_NO_TRACE_HOOKS
  if (observer_) observer_->on_send(*this, s->ext->chunk.info, now, now + serialization(bytes));
#endif

  const Picos start_ok = std::max(ready_at, free_since_);
  if (now > start_ok) blocked_ps_ += (now - start_ok).count();
  const Picos ser = serialization(bytes);
  --credits_;
  busy_ = true;
  in_flight_ = s;
  done_at_ = now + ser;
  busy_ps_ += ser.count();
  ++chunks_;
  bytes_ += bytes;
  return done_at_;
}

void ChunkOutPort::set_observer(ChunkObserver* observer) {
#ifdef WAFERSIM_NO_TRACE_HOOKS
  if (observer) throw std::logic_error("this build has no tracing hooks (configured with WAFERSIM_TRACE_HOOKS=OFF)");
#else
  observer_ = observer;
#endif
}

bool ChunkOutPort::advance(Picos now) {
  if (!busy_ || now < done_at_) return false;
  Slot* s = in_flight_;
  busy_ = false;
  in_flight_ = nullptr;
  free_since_ = done_at_;
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  tlm::tlm_sync_enum r = socket->nb_transport_fw(s->trans, phase, delay);
  if (r != tlm::TLM_UPDATED || phase != tlm::END_REQ)
    throw std::logic_error("ChunkOutPort " + name_ + ": receiver did not accept the chunk");
  return true;
}

tlm::tlm_sync_enum ChunkOutPort::nb_transport_bw(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                                 sc_core::sc_time& /*delay*/) {
  if (phase != tlm::BEGIN_RESP) throw std::logic_error("ChunkOutPort " + name_ + ": unexpected phase");
  for (auto& s : slots_) {
    if (&s->trans != &trans) continue;
    s->ext->chunk.data.reset();
    free_slots_.push_back(s.get());
    ++credits_;
    phase = tlm::END_RESP;
    if (on_credit_) on_credit_();
    return tlm::TLM_COMPLETED;
  }
  throw std::logic_error("ChunkOutPort " + name_ + ": response for an unknown transaction");
}

void ChunkOutPort::add_stats(stats::Group& g) const {
  g.counter("chunks", &chunks_, "chunks", "chunks sent on this link");
  g.counter("bytes", &bytes_, "B", "bytes sent on this link");
  g.counter("busy", &busy_ps_, "ps", "time the link was serialising chunks");
  g.counter("blocked", &blocked_ps_, "ps",
            "time a ready chunk waited on an idle link for a free slot downstream (back-pressure)");
  g.formula(
      "bandwidth", [this] { return bandwidth_.bits_per_s; }, "b/s", "link bandwidth");
}

}  // namespace wafersim::sim::stream

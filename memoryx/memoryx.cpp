#include "memoryx/memoryx.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "sim/errors.h"

namespace wafersim::memoryx {
using sim::Picos;
using sim::stream::Chunk;
using sim::stream::ChunkInfo;
using sim::stream::Pass;

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Initial weight of a functional run: uniform in [-0.05, 0.05), from (seed, layer, index).
float initial_weight(std::uint64_t seed, std::uint32_t layer, std::uint64_t i) {
  const std::uint64_t x = splitmix64(splitmix64(seed ^ (std::uint64_t{layer} << 40)) + i);
  const float u = static_cast<float>(x >> 40) * (1.0F / 16777216.0F);
  return (u - 0.5F) * 0.1F;
}

}  // namespace

MemoryX::MemoryX(const sc_core::sc_module_name& name, const MemoryXConfig& config, const StreamPortConfig& ports,
                 std::vector<LayerSpec> layers, const OptimizerConfig& optimizer, const MemoryXOptions& options,
                 sim::stats::Group& stats)
    : sc_core::sc_module(name),
      host("host"),
      config_(config),
      ports_(ports),
      layers_(std::move(layers)),
      optimizer_(optimizer),
      options_(options) {
  if (ports_.planes == 0 || ports_.buffer_chunks == 0 || ports_.chunk_bytes == 0 || ports_.chunk_bytes % 4 != 0)
    throw sim::InputError(fmt::format(
        "memoryx: stream ports need planes >= 1, buffer_chunks >= 1 and a chunk size that is a multiple of 4 B "
        "(found {} planes, {} slots, {} B chunks)",
        ports_.planes, ports_.buffer_chunks, ports_.chunk_bytes));
  optimizer_.validate();
  for (const auto& l : layers_)
    if (l.sparse() && ports_.chunk_bytes % sim::stream::kSparseEntryBytes != 0)
      throw sim::InputError(fmt::format(
          "memoryx: sparse layer '{}' needs a chunk size that is a multiple of {} B (value and index), found {} B",
          l.name, sim::stream::kSparseEntryBytes, ports_.chunk_bytes));
  placement_ = place(layers_, config_, optimizer_.kind);

  state_.resize(layers_.size());
  gradient_record_of_.assign(layers_.size(), -1);
  if (options_.functional) {
    const std::uint32_t moments = moment_count(optimizer_.kind);
    for (std::uint32_t l = 0; l < layers_.size(); ++l) {
      auto& st = state_[l];
      const std::uint64_t n = layers_[l].params;
      st.w.resize(n);
      for (std::uint64_t i = 0; i < n; ++i) st.w[i] = initial_weight(options_.seed, l, i);
      if (moments >= 1) st.m.assign(n, 0.0F);
      if (moments >= 2) st.v.assign(n, 0.0F);
      st.g.assign(n, 0.0F);
      const LayerSpec& ls = layers_[l];
      if (!ls.sparse()) continue;
      if (!ls.mask || ls.mask->size() != n)
        throw sim::InputError(
            fmt::format("memoryx: sparse layer '{}' needs its mask of {} parameters in a functional run", ls.name, n));
      if (n > 0x100000000ULL)
        throw sim::InputError(
            fmt::format("memoryx: sparse layer '{}' has {} parameters: indices are 32-bit", ls.name, n));
      for (std::uint64_t i = 0; i < n; ++i)
        if ((*ls.mask)[i]) st.kept.push_back(static_cast<std::uint32_t>(i));
      if (st.kept.size() != ls.kept)
        throw sim::InputError(fmt::format("memoryx: the mask of layer '{}' keeps {} parameters, the layer says {}",
                                          ls.name, st.kept.size(), ls.kept));
      apply_mask(l);
    }
  }
  slots_.resize(placement_.staging_slots);

  planes_out_.resize(ports_.planes);
  planes_in_.resize(ports_.planes);
  for (std::uint32_t p = 0; p < ports_.planes; ++p) {
    planes_out_[p].port = std::make_unique<sim::stream::ChunkOutPort>(
        fmt::format("stream_out{}", p), ports_.port_bandwidth, [this] { wake_.notify(sc_core::SC_ZERO_TIME); });
    planes_in_[p].port = std::make_unique<sim::stream::ChunkInPort>(
        fmt::format("gradient_in{}", p), ports_.buffer_chunks, [this](const sim::stream::ChunkInPort::Entry& e) {
          const ChunkInfo& info = e.chunk.info;
          if (info.pass != Pass::Gradient || info.layer >= layers_.size() || info.step != state_[info.layer].updates ||
              info.sparse != layers_[info.layer].sparse() || info.count != chunks_of(info.layer) ||
              info.bytes != sim::stream::chunk_size(weight_bytes(info.layer), ports_.chunk_bytes, info.index))
            throw sim::SimulationError(fmt::format("{}: unexpected {}", this->name(), info.describe()));
          int& r = gradient_record_of_[info.layer];
          if (r < 0 || gradient_records_[static_cast<std::size_t>(r)].step != info.step) {
            gradient_records_.push_back(GradientRecord{info.layer, info.step, e.arrival, Picos::never()});
            r = static_cast<int>(gradient_records_.size() - 1);
          }
          wake_.notify(sc_core::SC_ZERO_TIME);
        });
  }
  host.register_b_transport(this, &MemoryX::b_transport);
  host.register_transport_dbg(this, &MemoryX::transport_dbg);

  SC_HAS_PROCESS(MemoryX);
  SC_METHOD(run);
  sensitive << wake_;
  add_stats(stats.group(basename()));
}

std::uint32_t MemoryX::chunks_of(std::uint32_t layer) const {
  return sim::stream::chunk_count(weight_bytes(layer), ports_.chunk_bytes);
}

void MemoryX::set_weights(std::uint32_t layer, std::vector<float> w) {
  if (!options_.functional) throw std::logic_error("MemoryX::set_weights in a timing-only run");
  if (w.size() != layers_.at(layer).params) throw std::invalid_argument("MemoryX::set_weights: wrong size");
  state_[layer].w = std::move(w);
  apply_mask(layer);
}

void MemoryX::resume(std::uint32_t layer, std::vector<float> w, std::vector<float> m, std::vector<float> v,
                     std::uint32_t updates_before) {
  if (sc_core::sc_is_running()) throw std::logic_error("MemoryX::resume after the simulation started");
  LayerState& st = state_.at(layer);
  if (m.size() != st.m.size() || v.size() != st.v.size())
    throw std::invalid_argument("MemoryX::resume: moments of the wrong size");
  set_weights(layer, std::move(w));
  st.m = std::move(m);
  st.v = std::move(v);
  st.updates_before = updates_before;
  apply_mask(layer);
}

void MemoryX::apply_mask(std::uint32_t layer) {
  const LayerSpec& ls = layers_[layer];
  if (!ls.sparse() || !ls.mask) return;
  LayerState& st = state_[layer];
  for (std::size_t i = 0; i < st.w.size(); ++i) {
    if ((*ls.mask)[i]) continue;
    st.w[i] = 0.0F;
    if (!st.m.empty()) st.m[i] = 0.0F;
    if (!st.v.empty()) st.v[i] = 0.0F;
  }
}

void MemoryX::schedule_steps(std::uint32_t steps) {
  if (sc_core::sc_is_running()) throw std::logic_error("MemoryX::schedule_steps after the simulation started");
  steps_ = steps;
  streams_.clear();
  const auto layers = static_cast<std::uint32_t>(layers_.size());
  auto add = [&](std::uint32_t l, Pass pass, std::uint32_t s) {
    StreamRecord r;
    r.layer = l;
    r.pass = pass;
    r.step = s;
    r.chunks = chunks_of(l);
    r.flash = placement_.layers[l].tier == Tier::Flash;
    streams_.push_back(r);
  };
  for (std::uint32_t s = 0; s < steps; ++s) {
    for (std::uint32_t l = 0; l < layers; ++l) add(l, Pass::Forward, s);
    for (std::uint32_t l = layers; l-- > 0;) add(l, Pass::Backward, s);
  }
  stream_slot_.assign(streams_.size(), -1);
}

const TierConfig& MemoryX::tier(std::uint32_t layer) const {
  return placement_.layers[layer].tier == Tier::Dram ? config_.dram : config_.flash;
}

Picos MemoryX::optimizer_time(std::uint32_t layer) const {
  const TierConfig& t = tier(layer);
  const std::uint64_t p = layers_[layer].sparse() ? layers_[layer].kept : layers_[layer].params;
  const std::uint64_t m = moment_count(optimizer_.kind);
  const std::uint64_t page = t.page_size.bytes();
  const std::uint64_t read = round_up(p * 4 * (2 + m), page);
  const std::uint64_t written = round_up(p * 4 * (1 + m), page);
  const Picos work =
      std::max({sim::param_time(p, config_.optimizer_throughput), sim::transfer_time(read, t.read_bandwidth),
                sim::transfer_time(written, t.write_bandwidth)});
  return sim::to_picos(t.read_latency) + work + sim::to_picos(t.write_latency);
}

Picos MemoryX::staging_time(std::uint32_t layer) const {
  const std::uint64_t bytes = round_up(weight_bytes(layer), config_.flash.page_size.bytes());
  const units::Bandwidth bw{std::min(config_.flash.read_bandwidth.bits_per_s, config_.dram.write_bandwidth.bits_per_s)};
  return sim::to_picos(config_.flash.read_latency) + sim::transfer_time(bytes, bw) +
         sim::to_picos(config_.dram.write_latency);
}

void MemoryX::run() {
  const Picos now = sim::now();
  bool progress = true;
  while (progress) {
    progress = false;
    progress = deliver(now) || progress;
    progress = receive_gradients(now) || progress;
    progress = optimize(now) || progress;
    progress = prefetch(now) || progress;
    progress = issue_reads(now) || progress;
    progress = send_chunks(now) || progress;
  }
  const Picos next = next_event(now);
  if (next.is_never()) return;
  if (next <= now) throw std::logic_error("MemoryX: next event not in the future");
  wake_.notify(sim::to_sc_time(next - now));
}

bool MemoryX::deliver(Picos now) {
  bool progress = false;
  for (auto& po : planes_out_) {
    if (!po.port->advance(now)) continue;
    --po.held;
    ++n_.chunks_out;
    n_.bytes_out += po.on_link_bytes;
    stream_sent(po.on_link, now);
    progress = true;
  }
  return progress;
}

void MemoryX::stream_sent(std::uint32_t s, Picos now) {
  StreamRecord& r = streams_[s];
  ++r.sent;
  if (r.sent < r.chunks) return;
  r.last_sent = now;
  ++n_.streams_done;
  if (stream_slot_[s] >= 0) --slots_[static_cast<std::size_t>(stream_slot_[s])].users;
  while (head_ < streams_.size() && streams_[head_].sent == streams_[head_].chunks) ++head_;
}

// Each plane writes its chunks one after another at its share of the tier's write
// bandwidth; a chunk's slot is freed when its transfer ends, the write completes one write
// latency later (posted), and a layer's gradient is complete with its last chunk's write.
bool MemoryX::receive_gradients(Picos now) {
  bool progress = false;
  const std::uint32_t planes = ports_.planes;
  for (auto& pi : planes_in_) {
    while (!pi.transferred.empty() && pi.transferred.front() <= now) {
      const auto& e = pi.port->front();
      const ChunkInfo& info = e.chunk.info;
      if (options_.functional) {
        if (!e.chunk.data || e.chunk.data->size() * 4 != info.bytes)
          throw sim::SimulationError(fmt::format("{}: {} carries no values", name(), info.describe()));
        LayerState& st = state_[info.layer];
        if (info.sparse) {
          const auto& d = *e.chunk.data;
          const std::uint64_t first = info.offset / sim::stream::kSparseEntryBytes;
          for (std::size_t k = 0; k + 1 < d.size(); k += 2) {
            std::uint32_t index = 0;
            std::memcpy(&index, &d[k + 1], sizeof index);
            if (index != st.kept.at(first + k / 2))
              throw sim::SimulationError(fmt::format("{}: {} has index {} where parameter {} is kept", name(),
                                                     info.describe(), index, st.kept.at(first + k / 2)));
            st.g[index] = d[k];
          }
        } else {
          std::copy(e.chunk.data->begin(), e.chunk.data->end(),
                    st.g.begin() + static_cast<std::ptrdiff_t>(info.offset / 4));
        }
      }
      ++n_.chunks_in;
      n_.bytes_in += info.bytes;
      const PendingWrite w{pi.written.front(), write_seq_++, info.layer, info.step};
      writes_.insert(std::upper_bound(writes_.begin(), writes_.end(), w,
                                      [](const PendingWrite& a, const PendingWrite& b) {
                                        return a.done != b.done ? a.done < b.done : a.seq < b.seq;
                                      }),
                     w);
      pi.port->pop();
      pi.transferred.pop_front();
      pi.written.pop_front();
      progress = true;
    }
    while (pi.transferred.size() < pi.port->size() && pi.write_free <= now) {
      const ChunkInfo& info = pi.port->at(pi.transferred.size()).chunk.info;
      const TierConfig& t = tier(info.layer);
      const std::uint64_t bytes = round_up(info.bytes, t.page_size.bytes());
      const Picos ser = sim::transfer_time(bytes * planes, t.write_bandwidth);
      pi.transferred.push_back(now + ser);
      pi.written.push_back(now + ser + sim::to_picos(t.write_latency));
      pi.write_free = now + ser;
      (placement_.layers[info.layer].tier == Tier::Dram ? n_.dram_written : n_.flash_written) += bytes;
      progress = true;
    }
  }
  std::size_t done = 0;
  while (done < writes_.size() && writes_[done].done <= now) {
    const PendingWrite& w = writes_[done++];
    LayerState& st = state_[w.layer];
    if (++st.grad_chunks == chunks_of(w.layer)) {
      st.grad_chunks = 0;
      gradient_records_[static_cast<std::size_t>(gradient_record_of_[w.layer])].complete = w.done;
      update_queue_.push_back(PendingUpdate{w.layer, w.step});
    }
    progress = true;
  }
  writes_.erase(writes_.begin(), writes_.begin() + static_cast<std::ptrdiff_t>(done));
  return progress;
}

bool MemoryX::optimize(Picos now) {
  bool progress = false;
  if (updating_ && now >= current_update_.end) {
    const std::uint32_t l = current_update_.layer;
    LayerState& st = state_[l];
    if (options_.functional) {
      engine_update(optimizer_, st.updates_before + st.updates + 1, st.w.data(), st.m.empty() ? nullptr : st.m.data(),
                    st.v.empty() ? nullptr : st.v.data(), st.g.data(), st.w.size());
      apply_mask(l);
    }
    ++st.updates;
    ++n_.updates;
    n_.params_updated += layers_[l].sparse() ? layers_[l].kept : layers_[l].params;
    update_records_.push_back(current_update_);
    updating_ = false;
    progress = true;
  }
  if (!updating_ && !update_queue_.empty()) {
    const PendingUpdate u = update_queue_.front();
    update_queue_.pop_front();
    const Picos t = optimizer_time(u.layer);
    current_update_ = UpdateRecord{u.layer, u.step, now, now + t};
    updating_ = true;
    n_.optimizer_busy_ps += t.count();
    const TierConfig& tc = tier(u.layer);
    const std::uint64_t p = layers_[u.layer].sparse() ? layers_[u.layer].kept : layers_[u.layer].params;
    const std::uint64_t m = moment_count(optimizer_.kind);
    const std::uint64_t page = tc.page_size.bytes();
    const bool dram = placement_.layers[u.layer].tier == Tier::Dram;
    (dram ? n_.dram_read : n_.flash_read) += round_up(p * 4 * (2 + m), page);
    (dram ? n_.dram_written : n_.flash_written) += round_up(p * 4 * (1 + m), page);
    progress = true;
  }
  return progress;
}

bool MemoryX::prefetch(Picos now) {
  bool progress = false;
  while (prefetch_next_ < streams_.size()) {
    const StreamRecord& r = streams_[prefetch_next_];
    if (!r.flash) {
      ++prefetch_next_;
      continue;
    }
    if (prefetch_next_ > head_ + config_.prefetch_depth) break;
    int use = -1;
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].layer == static_cast<int>(r.layer) && slots_[i].version == r.step) use = static_cast<int>(i);
    if (use < 0) {
      if (state_[r.layer].updates < r.step || prefetch_free_ > now) break;
      for (std::size_t i = 0; i < slots_.size() && use < 0; ++i)
        if (slots_[i].users == 0) use = static_cast<int>(i);
      if (use < 0) break;
      StagingSlot& s = slots_[static_cast<std::size_t>(use)];
      const Picos t = staging_time(r.layer);
      s.layer = static_cast<int>(r.layer);
      s.version = r.step;
      s.ready = now + t;
      prefetch_free_ = s.ready;
      const std::uint64_t bytes = round_up(weight_bytes(r.layer), config_.flash.page_size.bytes());
      ++n_.prefetches;
      n_.prefetch_bytes += bytes;
      n_.prefetch_busy_ps += t.count();
      n_.flash_read += bytes;
      n_.dram_written += round_up(bytes, config_.dram.page_size.bytes());
    }
    ++slots_[static_cast<std::size_t>(use)].users;
    stream_slot_[prefetch_next_] = use;
    ++prefetch_next_;
    progress = true;
  }
  return progress;
}

bool MemoryX::issue_reads(Picos now) {
  bool progress = false;
  const std::uint32_t planes = ports_.planes;
  for (std::uint32_t p = 0; p < planes; ++p) {
    PlaneOut& po = planes_out_[p];
    while (po.stream < streams_.size() && p + po.next * planes >= streams_[po.stream].chunks) {
      ++po.stream;
      po.next = 0;
    }
    if (po.stream >= streams_.size()) continue;
    StreamRecord& r = streams_[po.stream];
    if (state_[r.layer].updates < r.step || po.held >= ports_.buffer_chunks || po.read_free > now) continue;
    if (r.wanted.is_never()) r.wanted = now;
    if (r.flash) {
      const int slot = stream_slot_[po.stream];
      if (slot < 0 || slots_[static_cast<std::size_t>(slot)].ready > now) continue;
    }
    if (r.first_issue.is_never()) {
      r.first_issue = now;
      if (r.flash) {
        const Picos stall = now - r.wanted;
        if (stall == Picos(0)) {
          ++n_.prefetch_hits;
        } else {
          ++n_.prefetch_misses;
          n_.prefetch_stall_ps += stall.count();
        }
      }
    }
    const std::uint32_t index = p + po.next * planes;
    const std::uint64_t wbytes = weight_bytes(r.layer);
    ChunkInfo info;
    info.stream = po.stream;
    info.layer = r.layer;
    info.pass = r.pass;
    info.step = r.step;
    info.index = index;
    info.count = r.chunks;
    info.offset = std::uint64_t{index} * ports_.chunk_bytes;
    info.bytes = sim::stream::chunk_size(wbytes, ports_.chunk_bytes, index);
    info.sparse = layers_[r.layer].sparse();
    Chunk c{info, nullptr};
    if (options_.functional) {
      const auto& w = state_[r.layer].w;
      if (info.sparse) {
        const auto& kept = state_[r.layer].kept;
        auto d = std::make_shared<std::vector<float>>(info.bytes / 4);
        const std::uint64_t first = info.offset / sim::stream::kSparseEntryBytes;
        for (std::size_t k = 0; k + 1 < d->size(); k += 2) {
          const std::uint32_t at = kept[first + k / 2];
          (*d)[k] = w[at];
          std::memcpy(&(*d)[k + 1], &at, sizeof at);
        }
        c.data = std::move(d);
      } else {
        const auto first = w.begin() + static_cast<std::ptrdiff_t>(info.offset / 4);
        c.data = std::make_shared<const std::vector<float>>(first, first + info.bytes / 4);
      }
    }
    const std::uint64_t read = round_up(info.bytes, config_.dram.page_size.bytes());
    const Picos ser = sim::transfer_time(read * planes, config_.dram.read_bandwidth);
    po.queue.push_back(Issued{std::move(c), now + sim::to_picos(config_.dram.read_latency) + ser, po.stream});
    po.read_free = now + ser;
    ++po.held;
    ++po.next;
    n_.dram_read += read;
    progress = true;
  }
  return progress;
}

bool MemoryX::send_chunks(Picos now) {
  bool progress = false;
  for (auto& po : planes_out_) {
    if (po.queue.empty() || !po.port->can_send() || po.queue.front().ready > now) continue;
    Issued& i = po.queue.front();
    po.on_link = i.stream;
    po.on_link_bytes = i.chunk.info.bytes;
    po.port->send(std::move(i.chunk), now, i.ready);
    po.queue.pop_front();
    progress = true;
  }
  return progress;
}

Picos MemoryX::next_event(Picos now) const {
  Picos next = Picos::never();
  auto consider = [&](Picos t) {
    if (t > now && t < next) next = t;
  };
  for (const auto& po : planes_out_) {
    consider(po.port->done_at());
    if (!po.queue.empty()) consider(po.queue.front().ready);
    if (po.stream < streams_.size()) consider(po.read_free);
  }
  for (const auto& pi : planes_in_) {
    if (!pi.transferred.empty()) consider(pi.transferred.front());
    if (pi.transferred.size() < pi.port->size()) consider(pi.write_free);
  }
  if (!writes_.empty()) consider(writes_.front().done);
  if (updating_) consider(current_update_.end);
  consider(prefetch_free_);
  for (const auto& s : slots_) consider(s.ready);
  return next;
}

bool MemoryX::finished() const {
  if (head_ < streams_.size()) return false;
  return std::all_of(state_.begin(), state_.end(), [this](const LayerState& s) { return s.updates == steps_; });
}

std::string MemoryX::describe_state() const {
  std::string out = fmt::format("{}: {} of {} streams sent", name(), head_, streams_.size());
  for (std::uint32_t p = 0; p < planes_out_.size(); ++p) {
    const auto& po = planes_out_[p];
    out += fmt::format("; plane {}: stream {} chunk {}, {} slots held, {} credits", p, po.stream, po.next, po.held,
                       po.port->credits());
  }
  for (std::uint32_t l = 0; l < layers_.size(); ++l)
    out += fmt::format("; layer {} '{}': {} updates, {} gradient chunks in", l, layers_[l].name, state_[l].updates,
                       state_[l].grad_chunks);
  if (updating_) out += fmt::format("; updating layer {}", current_update_.layer);
  out += fmt::format("; {} updates queued", update_queue_.size());
  return out;
}

void MemoryX::add_stats(sim::stats::Group& g) {
  auto& d = g.group("dram");
  d.counter("bytes_read", &n_.dram_read, "B", "bytes read from DRAM (weight streams, optimizer state)");
  d.counter("bytes_written", &n_.dram_written, "B", "bytes written to DRAM (gradients, optimizer state, staging)");
  d.formula(
      "used", [this] { return static_cast<double>(placement_.dram_used); }, "B",
      "DRAM holding layer state and the staging area", true);
  auto& f = g.group("flash");
  f.counter("bytes_read", &n_.flash_read, "B", "bytes read from flash (staging, optimizer state)");
  f.counter("bytes_written", &n_.flash_written, "B", "bytes written to flash (gradients, optimizer state)");
  f.formula(
      "used", [this] { return static_cast<double>(placement_.flash_used); }, "B", "flash holding layer state", true);
  f.formula(
      "layers", [this] { return static_cast<double>(placement_.flash_layers()); }, "layers",
      "layers whose state lives in flash", true);
  auto& s = g.group("stream");
  s.counter("chunks", &n_.chunks_out, "chunks", "weight chunks sent");
  s.counter("bytes", &n_.bytes_out, "B", "weight bytes sent (each layer twice per step)");
  s.counter("streams", &n_.streams_done, "streams", "weight streams completed");
  auto& pf = g.group("prefetch");
  pf.counter("transfers", &n_.prefetches, "transfers", "flash-to-DRAM staging transfers");
  pf.counter("bytes", &n_.prefetch_bytes, "B", "bytes staged from flash");
  pf.counter("busy", &n_.prefetch_busy_ps, "ps", "time the staging engine was busy");
  pf.counter("hits", &n_.prefetch_hits, "streams", "flash-resident streams staged by the time they could start");
  pf.counter("misses", &n_.prefetch_misses, "streams", "flash-resident streams that waited for staging");
  pf.counter("stall", &n_.prefetch_stall_ps, "ps", "time streams waited for staging (exposed flash latency)");
  auto& o = g.group("optimizer");
  o.counter("updates", &n_.updates, "updates", "layer updates completed");
  o.counter("params", &n_.params_updated, "params", "parameters updated");
  o.counter("busy", &n_.optimizer_busy_ps, "ps", "time the optimizer engine was busy");
  auto& gr = g.group("gradients");
  gr.counter("chunks", &n_.chunks_in, "chunks", "reduced gradient chunks written");
  gr.counter("bytes", &n_.bytes_in, "B", "reduced gradient bytes written");
  for (std::uint32_t p = 0; p < ports_.planes; ++p) {
    planes_out_[p].port->add_stats(g.group(planes_out_[p].port->name()));
    planes_in_[p].port->add_stats(g.group(planes_in_[p].port->name()));
  }
}

void MemoryX::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& /*delay*/) { transport_dbg(trans); }

unsigned int MemoryX::transport_dbg(tlm::tlm_generic_payload& trans) {
  const std::uint64_t addr = trans.get_address();
  const std::uint64_t len = trans.get_data_length();
  trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
  if (!options_.functional) {
    trans.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    return 0;
  }
  std::uint64_t base = 0;
  for (auto& st : state_) {
    const std::uint64_t size = st.w.size() * 4;
    if (addr >= base && addr + len <= base + size) {
      auto* bytes = reinterpret_cast<unsigned char*>(st.w.data()) + (addr - base);
      if (trans.is_read())
        std::memcpy(trans.get_data_ptr(), bytes, len);
      else if (trans.is_write())
        std::memcpy(bytes, trans.get_data_ptr(), len);
      if (trans.is_write()) apply_mask(static_cast<std::uint32_t>(&st - state_.data()));
      trans.set_response_status(tlm::TLM_OK_RESPONSE);
      return static_cast<unsigned int>(len);
    }
    base += size;
  }
  return 0;
}

}  // namespace wafersim::memoryx

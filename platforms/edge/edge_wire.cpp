#include "platforms/edge/edge_wire.h"

#include <memory>

namespace wafersim::platforms::edge {

void put_messages(sim::parallel::Writer& w, const EdgeMessages& messages) {
  w.put<std::uint64_t>(messages.size());
  for (const auto& m : messages) {
    w.put<std::uint64_t>(m.at.count());
    w.put<std::uint8_t>(static_cast<std::uint8_t>(m.kind));
    w.put<std::uint32_t>(m.plane);
    if (m.kind != EdgeMessage::Kind::Chunk) continue;
    const auto& c = m.chunk.info;
    w.put(c.stream);
    w.put(c.layer);
    w.put<std::uint8_t>(static_cast<std::uint8_t>(c.pass));
    w.put(c.step);
    w.put(c.index);
    w.put(c.count);
    w.put(c.offset);
    w.put(c.bytes);
    w.put<std::uint8_t>(c.sparse ? 1 : 0);
    w.put<std::uint8_t>(m.chunk.data ? 1 : 0);
    if (m.chunk.data) w.put_vector(*m.chunk.data);
  }
}

EdgeMessages get_messages(sim::parallel::Reader& r) {
  EdgeMessages out(r.get<std::uint64_t>());
  for (auto& m : out) {
    m.at = sim::Picos(r.get<std::uint64_t>());
    m.kind = static_cast<EdgeMessage::Kind>(r.get<std::uint8_t>());
    m.plane = r.get<std::uint32_t>();
    if (m.kind != EdgeMessage::Kind::Chunk) continue;
    auto& c = m.chunk.info;
    c.stream = r.get<std::uint32_t>();
    c.layer = r.get<std::uint32_t>();
    c.pass = static_cast<sim::stream::Pass>(r.get<std::uint8_t>());
    c.step = r.get<std::uint32_t>();
    c.index = r.get<std::uint32_t>();
    c.count = r.get<std::uint32_t>();
    c.offset = r.get<std::uint64_t>();
    c.bytes = r.get<std::uint32_t>();
    c.sparse = r.get<std::uint8_t>() != 0;
    if (r.get<std::uint8_t>() != 0) m.chunk.data = std::make_shared<const std::vector<float>>(r.get_vector<float>());
  }
  return out;
}

void put_intervals(sim::parallel::Writer& w, const std::vector<Interval>& intervals) {
  w.put<std::uint64_t>(intervals.size());
  for (const auto& iv : intervals) {
    w.put<std::uint64_t>(iv.start.count());
    w.put<std::uint64_t>(iv.end.count());
  }
}

std::vector<Interval> get_intervals(sim::parallel::Reader& r) {
  std::vector<Interval> out(r.get<std::uint64_t>());
  for (auto& iv : out) {
    iv.start = sim::Picos(r.get<std::uint64_t>());
    iv.end = sim::Picos(r.get<std::uint64_t>());
  }
  return out;
}

}  // namespace wafersim::platforms::edge

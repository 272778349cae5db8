#include "fabric/endpoint.h"

#include <fmt/format.h>

#include <stdexcept>

namespace wafersim::fabric {

void Endpoint::bad_color(hw::Color c) const {
  throw std::logic_error(fmt::format("ramp: color {} used, but the fabric has {} colors", c.id(), mesh_.colors()));
}

bool Endpoint::has(hw::Color c) const {
  check(c);
  return (mesh_.visible(id_) >> c.id()) & 1u;
}

hw::Wavelet Endpoint::front(hw::Color c) const {
  check(c);
  const Flit f = mesh_.front(id_, c);
  return hw::Wavelet{f.payload, c, f.control()};
}

void Endpoint::pop(hw::Color c, sim::Cycle now) {
  check(c);
  mesh_.pop(id_, c, now);
}

bool Endpoint::can_send(hw::Color c) const {
  check(c);
  return mesh_.can_send(id_, c);
}

void Endpoint::send(const hw::Wavelet& w, sim::Cycle now) {
  check(w.color);
  mesh_.send(id_, w.color, Flit::make(w.payload, 0, true, true, w.control), now);
}

}  // namespace wafersim::fabric

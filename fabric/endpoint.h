#pragma once
// The core's (or an edge agent's) side of one ramp or edge I/O channel: hw::RampPort over
// the mesh's endpoint state.

#include <cstdint>

#include "fabric/mesh.h"
#include "hw/ramp.h"

namespace wafersim::fabric {

class Endpoint final : public hw::RampPort {
 public:
  Endpoint(Mesh& mesh, std::uint32_t id) : mesh_(mesh), id_(id) {}

  [[nodiscard]] bool has(hw::Color c) const override;
  [[nodiscard]] std::uint64_t visible() const override { return mesh_.visible(id_); }
  [[nodiscard]] std::uint64_t control_fronts() const override { return mesh_.control_fronts(id_); }
  [[nodiscard]] hw::Wavelet front(hw::Color c) const override;
  void pop(hw::Color c, sim::Cycle now) override;
  [[nodiscard]] bool can_send(hw::Color c) const override;
  void send(const hw::Wavelet& w, sim::Cycle now) override;

  [[nodiscard]] std::uint32_t id() const { return id_; }

 private:
  void check(hw::Color c) const {
    if (c.id() >= mesh_.colors()) bad_color(c);
  }
  [[noreturn, gnu::cold]] void bad_color(hw::Color c) const;
  Mesh& mesh_;
  std::uint32_t id_;
};

}  // namespace wafersim::fabric

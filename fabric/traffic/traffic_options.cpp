#include "fabric/traffic/traffic_options.h"

#include <fmt/format.h>

#include <limits>

#include "sim/errors.h"

namespace wafersim::fabric::traffic {

void TrafficOptions::validate(const FabricConfig& fabric, const MeshGeometry& geometry, bool static_routes) const {
  if (!(rate >= 0 && rate <= 1))
    throw sim::InputError(
        fmt::format("--rate {} is outside 0 .. 1 wavelets per node per cycle (a ramp carries one "
                    "wavelet per cycle)",
                    rate));
  if (packet_size < 1 || packet_size > 60000)
    throw sim::InputError(fmt::format("--packet-size {} is outside 1 .. 60000 wavelets", packet_size));
  if (static_routes && packet_size != 1)
    throw sim::InputError("--packet-size must be 1 with --routes: static color routes carry single wavelets");
  if (!static_routes && (colors < 1 || colors > fabric.colors))
    throw sim::InputError(fmt::format("--colors {} is outside 1 .. {} (fabric.colors)", colors, fabric.colors));
  if (measure < 1) throw sim::InputError("--measure must be at least 1 cycle");
  if (warmup > std::numeric_limits<std::uint32_t>::max() || measure > std::numeric_limits<std::uint32_t>::max() ||
      drain > std::numeric_limits<std::uint32_t>::max())
    throw sim::InputError("--warmup, --measure and --drain must each be below 2^32 cycles");
  if (geometry.routers() < 2) throw sim::InputError("synthetic traffic needs at least 2 routers");
}

}  // namespace wafersim::fabric::traffic

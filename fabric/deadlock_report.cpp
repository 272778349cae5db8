// The deadlock report: which routers hold wavelets, in which input queues and colors, what
// each queue's head waits for, and the cycle of queues waiting on each other.

#include <fmt/format.h>

#include <string>
#include <vector>

#include "fabric/mesh.h"

namespace wafersim::fabric {
namespace {
constexpr std::size_t kMaxRouters = 16;
constexpr std::size_t kMaxPayloads = 4;
}  // namespace

std::string Mesh::describe_queue(std::uint32_t r, std::uint32_t p, std::uint32_t c) const {
  return fmt::format("router {} {} input, color {}", geometry_.name(r), port_name(port_at(p)), c);
}

std::string Mesh::deadlock_report(sim::Cycle now) const {
  std::string out = fmt::format(
      "fabric deadlock at cycle {}: {} wavelet(s) in router queues and none has moved for {} cycles "
      "(fabric.deadlock_timeout = {} cycles)",
      now.count(), counts_->in_network, (now - last_progress_).count(), config_.deadlock_timeout.count());

  const RouterSweep& routers = *routers_;
  auto nonempty = [&routers](std::uint32_t r, std::uint32_t p) { return routers.queued_colors(r, p); };
  auto flit_of = [&routers](std::uint32_t r, std::uint32_t p, std::uint32_t c, std::uint32_t i) {
    return routers.queued_flit(r, p, c, i);
  };

  // What the head of queue (r, p, c) waits for: outputs still to send and why each is blocked.
  struct Wait {
    std::vector<std::string> reasons;
    std::uint32_t next = kNone;  // router * 5 + port of the full downstream queue it waits on
  };
  auto wait_of = [&](std::uint32_t r, std::uint32_t p, std::uint32_t c) {
    Wait w;
    const Flit head = flit_of(r, p, c, 0);
    const std::uint32_t route = routers.head_route(r, p, c);
    const std::uint32_t x = r % geometry_.width(), y = r / geometry_.width();
    std::uint32_t outs = 0;
    if (options_.routing == Routing::XY) {
      outs = route ? 1u << (route - 1) : bit(xy_output(x, y, head.payload));
    } else {
      const RouteEntry e = options_.routes ? options_.routes->at(r, c) : RouteEntry{};
      outs = e.forward & ~route;
    }
    for (std::uint32_t o = 0; o < kPorts; ++o) {
      if (!(outs & (1u << o))) continue;
      const Port op = port_at(o);
      const std::uint32_t owner = options_.routing == Routing::XY ? routers.holder(r, o, c) : kNone;
      if (options_.routing == Routing::XY && !route && owner != kNone) {
        w.reasons.push_back(
            fmt::format("{}: held by a packet from the {} input", port_name(op), port_name(port_at(owner))));
        continue;
      }
      const bool full = routers.out_of_credit(r, o, c);
      const std::uint32_t n = geometry_.neighbour(r, op);
      if (!full) {
        w.reasons.push_back(fmt::format("{}: credit available", port_name(op)));
      } else if (n != kNone) {
        w.reasons.push_back(
            fmt::format("{}: no credit, {} full", port_name(op), describe_queue(n, index(opposite(op)), c)));
        if (w.next == kNone) w.next = n * kPorts + index(opposite(op));
      } else if (op == Port::Ramp) {
        w.reasons.push_back(fmt::format("ramp: no credit, PE {} has not consumed color {} (its receive queue is full)",
                                        geometry_.name(r), c));
      } else {
        w.reasons.push_back(
            fmt::format("{}: no credit, the {} edge I/O channel of row {} is full", port_name(op), port_name(op), y));
      }
    }
    return w;
  };

  // A cycle of queues waiting on each other, from the first stuck queue.
  std::uint32_t start = kNone, start_c = 0;
  for (std::uint32_t r = 0; r < geometry_.routers() && start == kNone; ++r)
    for (std::uint32_t p = 0; p < kPorts && start == kNone; ++p)
      if (nonempty(r, p)) {
        start = r * kPorts + p;
        start_c = static_cast<std::uint32_t>(__builtin_ctzll(nonempty(r, p)));
      }
  if (start != kNone) {
    std::vector<std::uint32_t> chain;
    std::uint32_t cur = start;
    while (cur != kNone && chain.size() < 4 * std::size_t{geometry_.routers()} + 8) {
      bool seen = false;
      for (std::uint32_t v : chain) seen = seen || v == cur;
      if (seen) break;
      chain.push_back(cur);
      const std::uint32_t r = cur / kPorts, p = cur % kPorts;
      if (!((nonempty(r, p) >> start_c) & 1u)) {
        cur = kNone;
        break;
      }
      cur = wait_of(r, p, start_c).next;
    }
    if (cur != kNone) {
      std::size_t first = 0;
      while (chain[first] != cur) ++first;
      std::string cycle;
      for (std::size_t i = first; i < chain.size() && i < first + 16; ++i)
        cycle += fmt::format("{} {} -> ", geometry_.name(chain[i] / kPorts), port_name(port_at(chain[i] % kPorts)));
      if (chain.size() - first > 16) cycle += "... -> ";
      cycle += fmt::format("{} {}", geometry_.name(cur / kPorts), port_name(port_at(cur % kPorts)));
      out += fmt::format("\ncyclic wait on color {} (each full input queue waits for a credit from the next): {}",
                         start_c, cycle);
    }
  }

  out += "\nstuck routers (input queue: wavelets/depth [payloads] -> what the head waits for):";
  std::size_t listed = 0, stuck = 0;
  for (std::uint32_t r = 0; r < geometry_.routers(); ++r) {
    const std::uint64_t ne[kPorts] = {nonempty(r, 0), nonempty(r, 1), nonempty(r, 2), nonempty(r, 3), nonempty(r, 4)};
    if (!(ne[0] | ne[1] | ne[2] | ne[3] | ne[4])) continue;
    if (++stuck > kMaxRouters) continue;
    ++listed;
    out += fmt::format("\n  router {}:", geometry_.name(r));
    for (std::uint32_t p = 0; p < kPorts; ++p)
      for (std::uint64_t m = ne[p]; m; m &= m - 1) {
        const auto c = static_cast<std::uint32_t>(__builtin_ctzll(m));
        const std::uint32_t count = routers.queued(r, p, c);
        std::string payloads;
        for (std::uint32_t i = 0; i < count && i < kMaxPayloads; ++i)
          payloads += fmt::format("{}{:#x}", i ? ", " : "", flit_of(r, p, c, i).payload);
        if (count > kMaxPayloads) payloads += ", ...";
        std::string reasons;
        for (const auto& s : wait_of(r, p, c).reasons) reasons += (reasons.empty() ? "" : "; ") + s;
        out += fmt::format("\n    {} input, color {}: {}/{} [{}] -> {}", port_name(port_at(p)), c, count, depth_,
                           payloads, reasons);
      }
  }
  if (stuck > listed) out += fmt::format("\n  ... and {} more routers with queued wavelets", stuck - listed);
  return out;
}

}  // namespace wafersim::fabric

#include "models/mesh/collective.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "fabric/port.h"

namespace wafersim::models::mesh {
using fabric::bit;
using fabric::Port;
using hw::DType;
using hw::isa::Op;
using Side = LineRole::Side;

LineFamily LineFamily::whole(Axis axis, std::uint32_t length, std::uint32_t stage, LineColors colors) {
  return segmented(axis, length, {0}, stage, colors);
}

LineFamily LineFamily::segmented(Axis axis, std::uint32_t length, std::vector<std::uint32_t> starts,
                                 std::uint32_t stage, LineColors colors) {
  if (length == 0 || starts.empty() || starts[0] != 0) throw std::logic_error("LineFamily: segments start at 0");
  LineFamily f;
  f.axis = axis;
  f.length = length;
  f.starts = std::move(starts);
  f.colors = colors;
  for (std::uint32_t s = 0; s < f.starts.size(); ++s) {
    const std::uint32_t n = f.segment_length(s);
    if (n == 0 || n > length) throw std::logic_error("LineFamily: empty or overlapping segment");
    f.trees.push_back(LineTree{n, best_group(n, stage)});
  }
  return f;
}

std::uint32_t LineFamily::segment_of(std::uint32_t position) const {
  const auto it = std::upper_bound(starts.begin(), starts.end(), position);
  return static_cast<std::uint32_t>(it - starts.begin()) - 1;
}

LineRole LineFamily::role(std::uint32_t position) const {
  const std::uint32_t s = segment_of(position);
  return trees[s].role(position - starts[s]);
}

std::uint32_t LineFamily::max_hops() const {
  std::uint32_t h = 0;
  for (const auto& t : trees) h = std::max(h, t.reduce_hops());
  return h;
}

std::uint32_t LineFamily::max_stages() const {
  std::uint32_t h = 0;
  for (const auto& t : trees) h = std::max(h, t.chain_stages());
  return h;
}

std::uint32_t stage_cycles(std::uint32_t vector_start, std::uint32_t add_latency, std::uint32_t ramp_latency) {
  return vector_start + add_latency + 2 * ramp_latency;
}

namespace {

// The port toward the segment's root from a PE on `side`, and away from it.
Port toward_root(Axis a, Side side) { return side == Side::Before ? toward_higher(a) : toward_lower(a); }
Port away_from_root(Axis a, Side side) { return side == Side::Before ? toward_lower(a) : toward_higher(a); }

// The phase-2 color of group g's root on a side (the two sides start on different colors, so
// the root receives them apart).
std::uint8_t root_color(const LineColors& c, Side side, std::uint32_t g) {
  return c.roots[(g + (side == Side::After ? 1 : 0)) % 2];
}

class Writer {
 public:
  Writer(fabric::RouteTable& t, const Region& r, Axis a, std::uint32_t line) : t_(t), r_(r), a_(a), line_(line) {}
  void set(std::uint32_t position, std::uint8_t color, std::uint8_t accept, std::uint8_t forward) {
    const std::uint32_t x = r_.x0 + (a_ == Axis::Column ? line_ : position);
    const std::uint32_t y = r_.y0 + (a_ == Axis::Column ? position : line_);
    const std::uint32_t router = y * t_.width() + x;
    if (!t_.at(router, color).empty())
      throw std::logic_error(fmt::format("mesh routes: color {} at ({}, {}) set twice", color, x, y));
    t_.set(router, color, fabric::RouteEntry{accept, forward});
  }

 private:
  fabric::RouteTable& t_;
  const Region& r_;
  Axis a_;
  std::uint32_t line_;
};

void segment_routes(Writer& w, const LineFamily& f, std::uint32_t start, const LineTree& tree) {
  const LineColors& c = f.colors;
  const Axis a = f.axis;
  const std::uint32_t m = tree.root();
  for (std::uint32_t i = 0; i < tree.length; ++i) {
    const LineRole r = tree.role(i);
    const std::uint32_t at = start + i;
    if (r.root()) {
      if (r.has_before) w.set(at, root_color(c, Side::Before, 0), bit(toward_lower(a)), bit(Port::Ramp));
      if (r.has_after) w.set(at, root_color(c, Side::After, 0), bit(toward_higher(a)), bit(Port::Ramp));
      const auto out = static_cast<std::uint8_t>((r.has_before ? bit(toward_lower(a)) : 0) |
                                                 (r.has_after ? bit(toward_higher(a)) : 0));
      if (out) w.set(at, c.bcast, bit(Port::Ramp), out);
      continue;
    }
    const Port in = toward_root(a, r.side), out = away_from_root(a, r.side);
    const std::uint32_t side = tree.side_length(r.side);
    // Phase 1: a member sends toward its root on the color of its distance's parity; the next
    // member inward receives it.
    if (!r.group_root) w.set(at, c.chain[r.distance % 2], bit(Port::Ramp), bit(in));
    if (!r.chain_start) w.set(at, c.chain[(r.distance + 1) % 2], bit(out), bit(Port::Ramp));
    // Phase 2: a group root sends toward the next root inward (or M); the members between pass
    // it on; the inner root receives it.
    if (r.group_root) {
      w.set(at, root_color(c, r.side, r.group), bit(Port::Ramp), bit(in));
      if (!r.outermost) w.set(at, root_color(c, r.side, r.group + 1), bit(out), bit(Port::Ramp));
    } else if (!r.outermost) {
      w.set(at, root_color(c, r.side, r.group + 1), bit(out), bit(in));
    }
    // The broadcast, outward from M.
    const auto fwd = static_cast<std::uint8_t>(bit(Port::Ramp) | (r.distance < side ? bit(out) : 0));
    w.set(at, c.bcast, bit(in), fwd);
  }
  (void)m;
}

}  // namespace

void add_routes(fabric::RouteTable& table, const Region& region, const LineFamily& f) {
  const std::uint32_t lines = f.axis == Axis::Column ? region.columns : region.rows;
  const std::uint32_t length = f.axis == Axis::Column ? region.rows : region.columns;
  if (length != f.length) throw std::logic_error("mesh routes: the family's line length is not the region's");
  for (std::uint32_t line = 0; line < lines; ++line) {
    Writer w(table, region, f.axis, line);
    for (std::uint32_t s = 0; s < f.trees.size(); ++s) segment_routes(w, f, f.starts[s], f.trees[s]);
  }
}

void emit_reduce(compiler::ProgramBuilder& b, const LineFamily& f, const LineRole& r, std::uint32_t buf,
                 std::uint32_t n, Op op, const std::string& name) {
  if (op != Op::FAdd && op != Op::FMax) throw std::logic_error("emit_reduce: FAdd or FMax");
  using compiler::VOperand;
  const LineColors& c = f.colors;
  const VOperand own = VOperand::d(b.mem(name + "_buf", DType::F32, buf, n));
  auto in = [&](std::uint8_t color) {
    return VOperand::d(b.fabin(fmt::format("{}_in{}", name, color), DType::F32, color, n));
  };
  auto out = [&](std::uint8_t color) {
    return VOperand::d(b.fabout(fmt::format("{}_out{}", name, color), DType::F32, color, n));
  };
  if (r.root()) {
    if (r.has_before) b.vop(op, DType::F32, DType::F32, own, in(root_color(c, Side::Before, 0)), own);
    if (r.has_after) b.vop(op, DType::F32, DType::F32, own, in(root_color(c, Side::After, 0)), own);
    return;
  }
  if (!r.group_root) {
    const VOperand to = out(c.chain[r.distance % 2]);
    if (r.chain_start)
      b.vop(Op::FMov, DType::F32, DType::F32, to, own);
    else
      b.vop(op, DType::F32, DType::F32, to, in(c.chain[(r.distance + 1) % 2]), own);
    return;
  }
  if (!r.chain_start) b.vop(op, DType::F32, DType::F32, own, in(c.chain[(r.distance + 1) % 2]), own);
  const VOperand to = out(root_color(c, r.side, r.group));
  if (r.outermost)
    b.vop(Op::FMov, DType::F32, DType::F32, to, own);
  else
    b.vop(op, DType::F32, DType::F32, to, in(root_color(c, r.side, r.group + 1)), own);
}

void emit_broadcast(compiler::ProgramBuilder& b, const LineFamily& f, const LineRole& r, std::uint32_t buf,
                    std::uint32_t n, DType type, const std::string& name) {
  using compiler::VOperand;
  const std::uint8_t color = f.colors.bcast;
  const VOperand mine = VOperand::d(b.mem(name + "_val", type, buf, n));
  if (r.root()) {
    if (r.has_before || r.has_after)
      b.vop(Op::FMov, type, type, VOperand::d(b.fabout(name + "_bcast", type, color, n)), mine);
    return;
  }
  b.vop(Op::FMov, type, type, mine, VOperand::d(b.fabin(name + "_bcast", type, color, n)));
}

void emit_allreduce(compiler::ProgramBuilder& b, const LineFamily& f, const LineRole& r, std::uint32_t buf,
                    std::uint32_t n, Op op, const std::string& name) {
  emit_reduce(b, f, r, buf, n, op, name);
  emit_broadcast(b, f, r, buf, n, DType::F32, name);
}

namespace {

// The rank of the PE at `distance` on `side` in the gather's order.
std::uint32_t gather_rank(const LineTree& t, Side side, std::uint32_t distance) {
  if (side == Side::Root) return 0;
  return side == Side::Before ? distance : t.side_length(Side::Before) + distance;
}

}  // namespace

std::string GatherPlan::key() const {
  return fmt::format("{}-{}+{}+{}|{}-{}|{}-{}", lo, hi, chain, roots, before[0], before[1], after[0], after[1]);
}

GatherPlan gather_plan(const LineFamily& f, std::uint32_t position, std::uint32_t units) {
  const std::uint32_t s = f.segment_of(position);
  const LineTree& t = f.trees[s];
  const LineRole r = t.role(position - f.starts[s]);
  const std::uint64_t n = t.length;
  auto lo = [&](std::uint32_t rank) { return static_cast<std::uint32_t>(std::uint64_t{rank} * units / n); };
  GatherPlan p;
  const std::uint32_t rank = gather_rank(t, r.side, r.distance);
  p.lo = lo(rank);
  p.hi = lo(rank + 1);
  if (r.root()) {
    const std::uint32_t B = t.side_length(Side::Before), A = t.side_length(Side::After);
    p.before[0] = lo(1);
    p.before[1] = lo(1 + B);
    p.after[0] = lo(1 + B);
    p.after[1] = lo(1 + B + A);
    return p;
  }
  const std::uint32_t side = t.side_length(r.side);
  const std::uint32_t far = std::min((r.group + 1) * t.group, side);  // the group's chain start
  p.chain = lo(gather_rank(t, r.side, far) + 1) - p.hi;
  if (r.group_root) p.roots = lo(gather_rank(t, r.side, side) + 1) - lo(gather_rank(t, r.side, far) + 1);
  return p;
}

void emit_gather(compiler::ProgramBuilder& b, const LineFamily& f, std::uint32_t position, std::uint32_t buf,
                 std::uint32_t units, std::uint32_t unit, std::uint8_t then, std::uint8_t ut, const std::string& name) {
  using compiler::VOperand;
  const GatherPlan p = gather_plan(f, position, units);
  const LineRole r = f.role(position);
  const LineColors& c = f.colors;
  auto run = [&](const std::string& tag, std::uint32_t from, std::uint32_t to) {
    return VOperand::d(b.mem(name + tag, DType::F32, buf + from * unit * 4, (to - from) * unit));
  };
  compiler::VectorOptions o;
  o.async = true;
  o.ut = ut;
  if (r.root()) {
    const bool before = p.before[1] > p.before[0], after = p.after[1] > p.after[0];
    if (before && after) b.block(then);
    if (before) {
      o.on_done = hw::isa::OnDone::Activate;
      o.task = then;
      b.vop(Op::FMov, DType::F32, DType::F32, run("_before", p.before[0], p.before[1]),
            VOperand::d(b.fabin(name + "_from_before", DType::F32, root_color(c, Side::Before, 0),
                                (p.before[1] - p.before[0]) * unit)),
            {}, {}, o);
    }
    if (after) {
      o.on_done = before ? hw::isa::OnDone::Unblock : hw::isa::OnDone::Activate;
      o.task = then;
      o.ut = static_cast<std::uint8_t>(ut + 1);
      b.vop(Op::FMov, DType::F32, DType::F32, run("_after", p.after[0], p.after[1]),
            VOperand::d(b.fabin(name + "_from_after", DType::F32, root_color(c, Side::After, 0),
                                (p.after[1] - p.after[0]) * unit)),
            {}, {}, o);
    }
    if (!before && !after) b.activate(then);
    b.ret();
    return;
  }
  // Everything this PE sends goes out on one color: its chain's toward its group root, or a
  // group root's phase-2 color toward the next root inward.
  const std::uint8_t out = r.group_root ? root_color(c, r.side, r.group) : c.chain[r.distance % 2];
  const std::uint32_t total = p.hi - p.lo + p.chain + p.roots;
  if (total == 0) {
    b.activate(then);
    b.ret();
    return;
  }
  struct Part {
    std::uint32_t units;
    int from;  // -1: the PE's own share; else the input color
  };
  const Part parts[3] = {{p.hi - p.lo, -1},
                         {p.chain, c.chain[(r.distance + 1) % 2]},
                         {p.roots, r.group_root ? root_color(c, r.side, r.group + 1) : 0}};
  int last = -1;
  for (int i = 0; i < 3; ++i)
    if (parts[i].units) last = i;
  for (int i = 0; i < 3; ++i) {
    if (!parts[i].units) continue;
    const std::uint32_t len = parts[i].units * unit;
    if (i == last) {
      o.on_done = hw::isa::OnDone::Activate;
      o.task = then;
    }
    const VOperand to = VOperand::d(b.fabout(fmt::format("{}_out{}", name, i), DType::F32, out, len));
    const VOperand from = parts[i].from < 0 ? run("_own", p.lo, p.hi)
                                            : VOperand::d(b.fabin(fmt::format("{}_in{}", name, i), DType::F32,
                                                                  static_cast<std::uint8_t>(parts[i].from), len));
    b.vop(Op::FMov, DType::F32, DType::F32, to, from, {}, {}, o);
  }
  b.ret();
}

}  // namespace wafersim::models::mesh

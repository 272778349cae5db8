#include "platforms/inference/wafer_process.h"

#include <systemc>

#include <cstring>

#include "sim/child_process.h"
#include "sim/errors.h"

namespace wafersim::platforms::inference {
using sim::stats::Group;
using sim::stats::Histogram;
using sim::stats::Stat;

void Wire::u64(std::uint64_t v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }
void Wire::f64(double v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }
void Wire::str(const std::string& v) {
  u64(v.size());
  bytes_ += v;
}

void Wire::take(void* p, std::size_t n) {
  if (at_ + n > bytes_.size()) throw sim::SimulationError("a wafer's process sent a truncated result");
  std::memcpy(p, bytes_.data() + at_, n);
  at_ += n;
}

std::uint64_t Wire::u64() {
  std::uint64_t v = 0;
  take(&v, sizeof v);
  return v;
}

double Wire::f64() {
  double v = 0;
  take(&v, sizeof v);
  return v;
}

std::string Wire::str() {
  const std::uint64_t n = u64();
  if (at_ + n > bytes_.size()) throw sim::SimulationError("a wafer's process sent a truncated result");
  std::string s = bytes_.substr(at_, n);
  at_ += n;
  return s;
}

void put(Wire& w, const models::mesh::StepBound& b) {
  for (std::uint64_t v : {b.compute, b.sram, b.fabric, b.edge, b.latency}) w.u64(v);
}

models::mesh::StepBound get_bound(Wire& w) {
  models::mesh::StepBound b;
  b.compute = w.u64();
  b.sram = w.u64();
  b.fabric = w.u64();
  b.edge = w.u64();
  b.latency = w.u64();
  return b;
}

void put(Wire& w, const MeshStepResult& s) {
  w.str(s.name);
  w.str(s.kernel);
  for (std::uint64_t v : {std::uint64_t{s.layer}, s.start, s.end}) w.u64(v);
  put(w, s.bound);
  w.u64(s.flops);
  w.u64(s.busy_pe_cycles);
}

MeshStepResult get_step(Wire& w) {
  MeshStepResult s;
  s.name = w.str();
  s.kernel = w.str();
  s.layer = static_cast<std::uint32_t>(w.u64());
  s.start = w.u64();
  s.end = w.u64();
  s.bound = get_bound(w);
  s.flops = w.u64();
  s.busy_pe_cycles = w.u64();
  return s;
}

void put(Wire& w, const Group& g) {
  w.u64(g.stats().size());
  for (const Stat& s : g.stats()) {
    w.u64(static_cast<std::uint64_t>(s.kind()));
    w.str(s.name());
    w.str(s.unit());
    w.str(s.description());
    w.u64(s.integral());
    if (s.kind() == Stat::Kind::Scalar) {
      w.f64(s.value());
    } else if (s.kind() == Stat::Kind::Vector) {
      const std::size_t n = s.size();
      w.u64(n);
      for (std::size_t i = 0; i < n; ++i) w.f64(s.element(i));
    } else {
      const Histogram::State h = s.histogram()->state();
      for (std::uint64_t v : {h.width, h.overflow, h.samples, h.sum, h.min, h.max}) w.u64(v);
      w.u64(h.buckets.size());
      for (std::uint64_t v : h.buckets) w.u64(v);
    }
  }
  w.u64(g.groups().size());
  for (const auto& c : g.groups()) {
    w.str(c->name());
    put(w, *c);
  }
}

void get_stats(Wire& w, Group& into, std::vector<std::unique_ptr<Histogram>>& keep) {
  const std::uint64_t stats = w.u64();
  for (std::uint64_t i = 0; i < stats; ++i) {
    const auto kind = static_cast<Stat::Kind>(w.u64());
    const std::string name = w.str(), unit = w.str(), description = w.str();
    const bool integral = w.u64() != 0;
    if (kind == Stat::Kind::Scalar) {
      into.formula(
          name, [v = w.f64()] { return v; }, unit, description, integral);
    } else if (kind == Stat::Kind::Vector) {
      std::vector<double> v(w.u64());
      for (double& x : v) x = w.f64();
      auto shared = std::make_shared<const std::vector<double>>(std::move(v));
      into.vector(
          name, [shared] { return shared->size(); }, [shared](std::size_t k) { return (*shared)[k]; }, unit,
          description, integral);
    } else {
      Histogram::State h;
      for (std::uint64_t* v : {&h.width, &h.overflow, &h.samples, &h.sum, &h.min, &h.max}) *v = w.u64();
      h.buckets.resize(w.u64());
      for (std::uint64_t& v : h.buckets) v = w.u64();
      keep.push_back(std::make_unique<Histogram>(Histogram::from(std::move(h))));
      into.distribution(name, keep.back().get(), unit, description);
    }
  }
  const std::uint64_t groups = w.u64();
  for (std::uint64_t i = 0; i < groups; ++i) {
    const std::string name = w.str();
    get_stats(w, into.group(name), keep);
  }
}

Wire in_child(const std::function<void(Wire&)>& work) {
  if (sc_core::sc_get_status() != sc_core::SC_ELABORATION)
    throw sim::SimulationError("a wafer's process needs a process in which no simulation has started");
  return Wire(sim::run_in_child_text(
      [&] {
        Wire w;
        work(w);
        return w.bytes();
      },
      "a wafer's process"));
}

}  // namespace wafersim::platforms::inference

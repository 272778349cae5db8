#include "sim/stats/stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace wafersim::sim::stats {

Histogram::Histogram(std::uint64_t bucket_width, std::size_t buckets)
    : width_(bucket_width == 0 ? 1 : bucket_width), buckets_(buckets, 0) {}

void Histogram::clear() {
  std::fill(buckets_.begin(), buckets_.end(), 0);
  overflow_ = samples_ = sum_ = min_ = max_ = 0;
}

Histogram::State Histogram::state() const { return State{width_, overflow_, samples_, sum_, min_, max_, buckets_}; }

Histogram Histogram::from(State s) {
  Histogram h(s.width, 0);
  h.buckets_ = std::move(s.buckets);
  h.overflow_ = s.overflow;
  h.samples_ = s.samples;
  h.sum_ = s.sum;
  h.min_ = s.min;
  h.max_ = s.max;
  return h;
}

std::uint64_t Histogram::quantile(double q) const {
  if (samples_ == 0) return 0;
  auto need = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(samples_)));
  if (need == 0) need = 1;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= need) return std::min<std::uint64_t>(max_, (i + 1) * width_ - 1);
  }
  return max_;
}

Stat::Stat(std::string name, std::string unit, std::string description, std::function<double()> value)
    : kind_(Kind::Scalar),
      name_(std::move(name)),
      unit_(std::move(unit)),
      description_(std::move(description)),
      value_(std::move(value)) {}

Stat::Stat(std::string name, std::string unit, std::string description, std::function<std::size_t()> size,
           std::function<double(std::size_t)> element)
    : kind_(Kind::Vector),
      name_(std::move(name)),
      unit_(std::move(unit)),
      description_(std::move(description)),
      size_(std::move(size)),
      element_(std::move(element)) {}

Stat::Stat(std::string name, std::string unit, std::string description, const Histogram* histogram)
    : kind_(Kind::Distribution),
      name_(std::move(name)),
      unit_(std::move(unit)),
      description_(std::move(description)),
      histogram_(histogram) {}

Group::Group(std::string name, Group* parent) : name_(std::move(name)), parent_(parent) {}

Group& Group::group(std::string_view name) {
  for (auto& g : groups_)
    if (g->name_ == name) return *g;
  groups_.push_back(std::make_unique<Group>(std::string(name), this));
  return *groups_.back();
}

void Group::move_first_groups_last(std::size_t count) {
  std::rotate(groups_.begin(), groups_.begin() + static_cast<std::ptrdiff_t>(std::min(count, groups_.size())),
              groups_.end());
}

void Group::add(Stat s) {
  for (const auto& existing : stats_)
    if (existing.name() == s.name()) throw std::logic_error("duplicate statistic '" + path() + "." + s.name() + "'");
  stats_.push_back(std::move(s));
}

void Group::counter(std::string_view name, const std::uint64_t* value, std::string_view unit,
                    std::string_view description) {
  Stat s(std::string(name), std::string(unit), std::string(description),
         [value] { return static_cast<double>(*value); });
  s.set_integral(true);
  add(std::move(s));
}

void Group::formula(std::string_view name, std::function<double()> value, std::string_view unit,
                    std::string_view description, bool integral) {
  Stat s(std::string(name), std::string(unit), std::string(description), std::move(value));
  s.set_integral(integral);
  add(std::move(s));
}

void Group::vector(std::string_view name, std::function<std::size_t()> size, std::function<double(std::size_t)> element,
                   std::string_view unit, std::string_view description, bool integral) {
  Stat s(std::string(name), std::string(unit), std::string(description), std::move(size), std::move(element));
  s.set_integral(integral);
  add(std::move(s));
}

void Group::distribution(std::string_view name, const Histogram* histogram, std::string_view unit,
                         std::string_view description) {
  add(Stat(std::string(name), std::string(unit), std::string(description), histogram));
}

std::string Group::path() const {
  if (!parent_) return {};
  std::string p = parent_->path();
  return p.empty() ? name_ : p + "." + name_;
}

const Group* Group::find_group(std::string_view path) const {
  const Group* cur = this;
  while (!path.empty() && cur) {
    auto dot = path.find('.');
    std::string_view head = path.substr(0, dot);
    const Group* next = nullptr;
    for (const auto& g : cur->groups_)
      if (g->name_ == head) next = g.get();
    cur = next;
    path = dot == std::string_view::npos ? std::string_view{} : path.substr(dot + 1);
  }
  return cur;
}

const Stat* Group::find(std::string_view path) const {
  auto dot = path.rfind('.');
  const Group* g = dot == std::string_view::npos ? this : find_group(path.substr(0, dot));
  if (!g) return nullptr;
  std::string_view leaf = dot == std::string_view::npos ? path : path.substr(dot + 1);
  for (const auto& s : g->stats_)
    if (s.name() == leaf) return &s;
  return nullptr;
}

}  // namespace wafersim::sim::stats

#pragma once
// The timeline producers write to: named tracks of slices, instants and counters in
// simulated time. Implemented by ChromeTrace (trace-event JSON for Perfetto).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/picos.h"

namespace wafersim::sim::trace {

struct TrackId {
  std::uint32_t process = 0, thread = 0;
};

// A slice's or instant's arguments: shown by Perfetto when the event is selected.
struct Arg {
  std::string key;
  std::string text;  // used when !numeric
  double number = 0;
  bool numeric = false;
  static Arg num(std::string key, double v) { return Arg{std::move(key), {}, v, true}; }
  static Arg str(std::string key, std::string v) { return Arg{std::move(key), std::move(v), 0, false}; }
};
using Args = std::vector<Arg>;

// Contract: a track is a (process, thread) pair of names, created on first use and kept in
// creation order; slices on one track must nest or follow each other (never overlap
// partially); `end` >= `start`. Counter series of one process form one counter track each.
// Events may come in any time order. Implementations may stop keeping events beyond a
// budget; they count the ones dropped.
class Timeline {
 public:
  virtual ~Timeline() = default;
  virtual TrackId track(std::string_view process, std::string_view thread) = 0;
  virtual void slice(TrackId track, std::string_view name, std::string_view category, Picos start, Picos end,
                     const Args& args = {}) = 0;
  virtual void instant(TrackId track, std::string_view name, Picos at, const Args& args = {}) = 0;
  // Sets counter `name` of `process` to `value` from time `at` on.
  virtual void counter(std::string_view process, std::string_view name, Picos at, double value) = 0;
};

}  // namespace wafersim::sim::trace

#pragma once
// The tracing of one run: the window clock, the tables of windowed counters, the timeline and
// the waveform file, and meta.json that describes them (docs/trace.md). Created at assembly
// only when tracing is asked for; producers (fabric/trace, hw/trace, sim/trace/link_tracer)
// register with it.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/tick_observer.h"
#include "sim/picos.h"
#include "sim/trace/chrome_trace.h"
#include "sim/trace/trace_options.h"
#include "sim/trace/vcd_file.h"
#include "sim/trace/window_producer.h"
#include "sim/trace/window_table.h"
#include "sim/units/quantity.h"

namespace wafersim::sim::trace {

class Recorder;

// The windows of the producers that sample one engine's components: it closes them before
// each of that engine's ticks (engines of different wafers tick independently).
class WindowSource final : public TickObserver {
 public:
  explicit WindowSource(Recorder& recorder) : recorder_(recorder) {}
  void add_producer(WindowProducer* producer) { producers_.push_back(producer); }
  void before_tick(Cycle now) override;
  // Windows closed so far.
  [[nodiscard]] std::uint64_t closed() const { return closed_; }

 private:
  friend class Recorder;
  void close_through(Cycle now);
  void close_last(Cycle end);

  Recorder& recorder_;
  std::vector<WindowProducer*> producers_;
  std::uint64_t closed_ = 0;
  Cycle sampled_until_{0};
};

// Windows are [i K, (i + 1) K) cycles of the reference clock (the wafers'); in SystemC time,
// from time_of(i K) on, rounded as sim::Engine::time_of. At most options.max_windows exist:
// when a run outgrows them, K doubles and windows merge in pairs (every table and producer).
//
// Contract: register tables, sources and producers before the run; attach each source to the
// engine whose components its producers sample (Engine::add_observer); call finish() once,
// after the run, with its length in cycles.
class Recorder {
 public:
  Recorder(TraceOptions options, std::filesystem::path dir, units::Frequency clock, std::uint64_t window_cycles);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  [[nodiscard]] const TraceOptions& options() const { return options_; }
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }
  [[nodiscard]] units::Frequency clock() const { return clock_; }
  [[nodiscard]] std::uint64_t window_cycles() const { return window_; }
  [[nodiscard]] std::uint64_t merges() const { return merges_; }
  [[nodiscard]] Picos time_of(Cycle c) const;
  // The window holding time t under the current window length.
  [[nodiscard]] std::uint64_t window_at(Picos t) const;
  // Merges windows until the one holding time t fits the budget; returns its index.
  std::uint64_t fit(Picos t);

  // A table in dir()/<file>, owned by the recorder.
  WindowTable& add_table(const std::string& file, const std::string& name, const std::string& description,
                         std::vector<WindowTable::Column> keys, std::vector<WindowTable::Column> values);
  // A source of windows for one engine, owned by the recorder.
  WindowSource& add_source();
  // A producer that fills windows by itself (no engine): told about merges and the end only.
  void add_producer(WindowProducer* producer) { free_producers_.push_back(producer); }
  // Null when the timeline (or VCD) is not traced.
  [[nodiscard]] Timeline* timeline() { return timeline_.get(); }
  [[nodiscard]] VcdFile* vcd() { return vcd_.get(); }
  // meta.json under construction: producers add their sections.
  nlohmann::ordered_json& meta() { return meta_; }

  // Closes the windows up to `end` (the run's length in cycles; the last window may be
  // short), lets producers finish, closes every file and writes meta.json. Returns the
  // names of the files written. The VCD gets the values of cycle end - 1 if SystemC did not
  // write them (a run ended by sc_stop).
  std::vector<std::string> finish(Cycle end);
  [[nodiscard]] bool finished() const { return finished_; }
  // The number of windows (final after finish()).
  [[nodiscard]] std::uint64_t windows() const { return windows_; }

 private:
  friend class WindowSource;
  void merge();

  TraceOptions options_;
  std::filesystem::path dir_;
  units::Frequency clock_;
  double period_ps_;
  std::uint64_t window_;
  std::vector<std::unique_ptr<WindowSource>> sources_;
  std::vector<WindowProducer*> free_producers_;
  std::vector<std::unique_ptr<WindowTable>> tables_;
  std::unique_ptr<ChromeTrace> timeline_;
  std::unique_ptr<VcdFile> vcd_;
  nlohmann::ordered_json meta_;
  std::uint64_t windows_ = 0;
  std::uint64_t merges_ = 0;
  bool finished_ = false;
};

}  // namespace wafersim::sim::trace

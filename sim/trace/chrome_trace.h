#pragma once
// The Chrome trace-event JSON format (the "JSON Array/Object" format Perfetto and
// chrome://tracing open): a Timeline streamed to a file as events come.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "sim/trace/timeline.h"

namespace wafersim::sim::trace {

// Times are microseconds with three decimals: nanoseconds, rounded (Perfetto keeps
// nanoseconds). No displayTimeUnit: some Perfetto versions read "ns" there as the unit of
// the timestamps. Processes and threads are numbered in creation order and named with
// metadata events (sorted in that order).
class ChromeTrace final : public Timeline {
 public:
  // Creates (truncates) `path`. At most `max_events` events are written.
  ChromeTrace(std::filesystem::path path, std::uint64_t max_events);
  ~ChromeTrace() override;
  ChromeTrace(const ChromeTrace&) = delete;
  ChromeTrace& operator=(const ChromeTrace&) = delete;

  TrackId track(std::string_view process, std::string_view thread) override;
  void slice(TrackId track, std::string_view name, std::string_view category, Picos start, Picos end,
             const Args& args = {}) override;
  void instant(TrackId track, std::string_view name, Picos at, const Args& args = {}) override;
  void counter(std::string_view process, std::string_view name, Picos at, double value) override;

  [[nodiscard]] std::uint64_t events() const { return events_; }
  [[nodiscard]] std::uint64_t dropped() const { return dropped_; }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  // Writes the closing brackets; no events afterwards.
  void close();

 private:
  std::uint32_t process(std::string_view name);
  bool admit();
  void emit(const std::string& event);

  std::filesystem::path path_;
  std::uint64_t max_events_;
  std::ofstream out_;
  std::string buffer_;
  std::map<std::string, std::uint32_t, std::less<>> processes_;
  std::map<std::pair<std::uint32_t, std::string>, std::uint32_t, std::less<>> threads_;
  std::map<std::uint32_t, std::uint32_t> thread_count_;
  std::uint64_t events_ = 0, dropped_ = 0;
  bool first_ = true;
  bool closed_ = false;
};

// "123.457": picoseconds as microseconds, rounded to the nanosecond.
std::string micros(Picos t);
// `s` as a JSON string literal (quotes and escapes).
std::string json_string(std::string_view s);

}  // namespace wafersim::sim::trace

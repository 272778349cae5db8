#include "sim/app/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "sim/units/quantity.h"

namespace wafersim::app {
using Clock = std::chrono::steady_clock;

Progress::Progress(std::string label, std::uint64_t total, std::string unit, bool enabled)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), enabled_(enabled), start_(Clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { finish(); }

bool Progress::terminal() { return isatty(STDERR_FILENO) != 0 && std::getenv("WAFERSIM_NO_PROGRESS") == nullptr; }

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

void Progress::update(std::uint64_t done) {
  if (!enabled_) return;
  auto now = Clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  double secs = elapsed_seconds();
  double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
  std::string line = fmt::format("{}: {} {}", label_, units::pretty(static_cast<double>(done), "", 4), unit_);
  if (total_ > 0) line += fmt::format(" of {} ({:.0f}%)", units::pretty(static_cast<double>(total_), "", 4),
                                      100.0 * static_cast<double>(done) / static_cast<double>(total_));
  line += fmt::format(", {}/s", units::pretty(rate, unit_, 3));
  if (total_ > done && rate > 0) line += fmt::format(", ETA {:.0f} s", static_cast<double>(total_ - done) / rate);
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (enabled_ && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  drawn_ = false;
}

}  // namespace wafersim::app

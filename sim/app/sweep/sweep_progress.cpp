#include "sim/app/sweep/sweep_progress.h"

#include <fmt/format.h>

#include <cstdio>

namespace wafersim::app::sweep {
using Clock = std::chrono::steady_clock;

namespace {

std::string clock_text(double seconds) {
  auto s = static_cast<long long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

}  // namespace

SweepProgress::SweepProgress(std::string name, std::size_t total, std::size_t finished_before, bool terminal)
    : name_(std::move(name)),
      total_(total),
      before_(finished_before),
      terminal_(terminal),
      start_(Clock::now()),
      last_draw_(start_) {}

SweepProgress::~SweepProgress() { finish(); }

double SweepProgress::elapsed_seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

void SweepProgress::set_running(std::size_t running) { running_ = running; }

std::string SweepProgress::line() const {
  const std::size_t done = before_ + ok_ + failed_;
  const std::size_t width = 24;
  std::size_t filled = total_ ? width * done / total_ : width;
  std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
  std::string s = fmt::format("{} [{}] {}/{} done, {} failed, {} running", name_, bar, done, total_, failed_, running_);
  const std::size_t now = ok_ + failed_;
  const std::size_t left = total_ - done;
  if (now > 0 && left > 0)
    s += fmt::format(", ETA {}", clock_text(elapsed_seconds() / static_cast<double>(now) * static_cast<double>(left)));
  return s;
}

void SweepProgress::finished(std::size_t index, const std::string& status, double wall_seconds,
                             const std::string& detail) {
  (status == "ok" ? ok_ : failed_)++;
  const std::size_t done = before_ + ok_ + failed_;
  if (!terminal_ || status != "ok") {
    if (terminal_ && drawn_) std::fprintf(stderr, "\r\033[K");
    std::string text = fmt::format("[{}/{}] point {} {} in {:.2f} s: {}", done, total_, index,
                                   status == "ok" ? std::string("ok") : status, wall_seconds, detail);
    std::fprintf(stderr, "%s\n", text.c_str());
    drawn_ = false;
  }
  redraw(true);
}

void SweepProgress::redraw(bool force) {
  if (!terminal_) return;
  auto now = Clock::now();
  if (!force && drawn_ && now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  std::fprintf(stderr, "\r\033[K%s", line().c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void SweepProgress::finish() {
  if (terminal_ && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  drawn_ = false;
}

}  // namespace wafersim::app::sweep

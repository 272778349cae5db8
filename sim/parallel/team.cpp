#include "sim/parallel/team.h"

#include <chrono>
#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace wafersim::sim::parallel {
namespace {

// Spins before yielding, and yields before sleeping, while waiting for a job or its end.
constexpr unsigned kSpins = 2000;
constexpr unsigned kYields = 200;

void relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

}  // namespace

unsigned Team::hardware_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

Team::Team(unsigned threads, bool timed)
    : times_(threads ? threads : 1),
      slots_(threads ? threads : 1),
      timed_(timed),
      spins_(threads > hardware_threads() ? 0 : kSpins) {
  if (threads == 0) throw std::invalid_argument("a team needs at least one thread");
  workers_.reserve(threads - 1);
  for (unsigned m = 1; m < threads; ++m) workers_.emplace_back([this, m] { worker(m); });
}

Team::~Team() {
  stop_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    wake_.notify_all();
  }
  for (auto& w : workers_) w.join();
}

void Team::record_failure(std::size_t part) {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  if (!failure_ || part < failure_part_) {
    failure_ = std::current_exception();
    failure_part_ = part;
  }
}

void Team::run_parts(unsigned member, std::size_t parts, const std::function<void(std::size_t)>& fn) {
  const std::size_t step = size();
  const std::uint64_t t0 = timed_ ? now_ns() : 0;
  std::uint64_t n = 0;
  for (std::size_t p = member; p < parts; p += step, ++n) {
    try {
      fn(p);
    } catch (...) {
      record_failure(p);
    }
  }
  if (!timed_) return;
  const std::uint64_t t1 = now_ns();
  times_[member].busy_ns += t1 - t0;
  times_[member].parts += n;
  slots_[member].end_ns = t1;
}

void Team::worker(unsigned member) {
  std::uint64_t seen = 0;
  while (true) {
    // Wait for the next job: spin, yield, then sleep until the caller wakes the sleepers.
    std::uint64_t g = generation_.load(std::memory_order_acquire);
    for (unsigned i = 0; g == seen && i < spins_ + kYields; ++i) {
      if (i < spins_)
        relax();
      else
        std::this_thread::yield();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire)) return;
    run_parts(member, parts_, *fn_);
    checked_in_.fetch_add(1, std::memory_order_release);
  }
}

void Team::run(std::size_t parts, const std::function<void(std::size_t)>& fn) {
  ++jobs_;
  failure_ = nullptr;
  if (!workers_.empty()) {
    fn_ = &fn;
    parts_ = parts;
    checked_in_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      wake_.notify_all();
    }
  }
  run_parts(0, parts, fn);
  const auto others = static_cast<unsigned>(workers_.size());
  for (unsigned i = 0; checked_in_.load(std::memory_order_acquire) != others; ++i)
    if (i < spins_)
      relax();
    else
      std::this_thread::yield();
  if (timed_) {
    const std::uint64_t end = now_ns();
    for (std::size_t m = 0; m < times_.size(); ++m)
      if (slots_[m].end_ns) times_[m].wait_ns += end - slots_[m].end_ns;
  }
  if (failure_) {
    std::exception_ptr e = failure_;
    failure_ = nullptr;
    std::rethrow_exception(e);
  }
}

}  // namespace wafersim::sim::parallel

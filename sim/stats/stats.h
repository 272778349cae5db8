#pragma once
// The statistics tree: groups (one per module, named like its SystemC hierarchical name)
// holding named statistics with a unit and a description. Models keep plain integers on
// their hot paths; a statistic only refers to them, and values are read at dump time.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace wafersim::sim::stats {

// A fixed-bucket histogram of non-negative integer samples (latencies, occupancies).
// add() is cheap: one division-free bucket index and three integer updates.
class Histogram {
 public:
  // Buckets [0,w), [w,2w), ... up to `buckets` of them; larger samples go to overflow.
  explicit Histogram(std::uint64_t bucket_width = 1, std::size_t buckets = 1024);
  void add(std::uint64_t sample, std::uint64_t count = 1) {
    if (count == 0) return;
    const std::uint64_t b = width_ == 1 ? sample : sample / width_;
    if (b < buckets_.size())
      buckets_[b] += count;
    else
      overflow_ += count;
    if (samples_ == 0 || sample < min_) min_ = sample;
    if (sample > max_) max_ = sample;
    samples_ += count;
    sum_ += sample * count;
  }
  void clear();
  // The whole state, to copy a histogram between processes.
  struct State {
    std::uint64_t width = 1, overflow = 0, samples = 0, sum = 0, min = 0, max = 0;
    std::vector<std::uint64_t> buckets;
  };
  [[nodiscard]] State state() const;
  static Histogram from(State s);

  [[nodiscard]] std::uint64_t samples() const { return samples_; }
  [[nodiscard]] std::uint64_t max() const { return max_; }
  [[nodiscard]] std::uint64_t min() const { return samples_ ? min_ : 0; }
  [[nodiscard]] double mean() const { return samples_ ? static_cast<double>(sum_) / static_cast<double>(samples_) : 0; }
  [[nodiscard]] double sum() const { return static_cast<double>(sum_); }
  // The smallest sample value v such that at least a fraction q of the samples are <= v:
  // exact when bucket_width is 1; else the bucket's upper edge; max() for overflowed ones.
  [[nodiscard]] std::uint64_t quantile(double q) const;
  [[nodiscard]] std::uint64_t bucket_width() const { return width_; }
  [[nodiscard]] const std::vector<std::uint64_t>& buckets() const { return buckets_; }
  [[nodiscard]] std::uint64_t overflow() const { return overflow_; }

 private:
  std::uint64_t width_;
  std::vector<std::uint64_t> buckets_;
  std::uint64_t overflow_ = 0;
  std::uint64_t samples_ = 0;
  std::uint64_t sum_ = 0;
  std::uint64_t min_ = 0;
  std::uint64_t max_ = 0;
};

// One named statistic. Its value is computed when read.
class Stat {
 public:
  enum class Kind { Scalar, Vector, Distribution };

  Stat(std::string name, std::string unit, std::string description, std::function<double()> value);
  Stat(std::string name, std::string unit, std::string description, std::function<std::size_t()> size,
       std::function<double(std::size_t)> element);
  Stat(std::string name, std::string unit, std::string description, const Histogram* histogram);

  [[nodiscard]] Kind kind() const { return kind_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& unit() const { return unit_; }
  [[nodiscard]] const std::string& description() const { return description_; }
  [[nodiscard]] double value() const { return value_ ? value_() : 0; }
  [[nodiscard]] std::size_t size() const { return size_ ? size_() : 0; }
  [[nodiscard]] double element(std::size_t i) const { return element_(i); }
  [[nodiscard]] const Histogram* histogram() const { return histogram_; }
  // Whether the value is integral (counters) so formatters print it without a fraction.
  [[nodiscard]] bool integral() const { return integral_; }
  void set_integral(bool v) { integral_ = v; }

 private:
  Kind kind_;
  std::string name_, unit_, description_;
  std::function<double()> value_;
  std::function<std::size_t()> size_;
  std::function<double(std::size_t)> element_;
  const Histogram* histogram_ = nullptr;
  bool integral_ = false;
};

// A node of the statistics tree. Groups and statistics keep their insertion order, so
// dumps are deterministic.
class Group {
 public:
  explicit Group(std::string name, Group* parent = nullptr);
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  // The child group `name`, created on first use.
  Group& group(std::string_view name);
  // Moves the first `count` child groups after the others, keeping the order within each part.
  void move_first_groups_last(std::size_t count);

  // A counter the model increments; read at dump time.
  void counter(std::string_view name, const std::uint64_t* value, std::string_view unit, std::string_view description);
  // A value computed at dump time (a ratio, a mean, a figure derived from counters).
  void formula(std::string_view name, std::function<double()> value, std::string_view unit,
               std::string_view description, bool integral = false);
  // An array of values, one per element (per router, per link, ...).
  void vector(std::string_view name, std::function<std::size_t()> size, std::function<double(std::size_t)> element,
              std::string_view unit, std::string_view description, bool integral = true);
  void distribution(std::string_view name, const Histogram* histogram, std::string_view unit,
                    std::string_view description);

  [[nodiscard]] const std::string& name() const { return name_; }
  // Dotted path from the root (the root's own name is not part of it).
  [[nodiscard]] std::string path() const;
  [[nodiscard]] const std::vector<std::unique_ptr<Group>>& groups() const { return groups_; }
  [[nodiscard]] const std::vector<Stat>& stats() const { return stats_; }
  // Finds a statistic by dotted path relative to this group, or nullptr.
  [[nodiscard]] const Stat* find(std::string_view path) const;
  [[nodiscard]] const Group* find_group(std::string_view path) const;

 private:
  void add(Stat s);
  std::string name_;
  Group* parent_;
  std::vector<std::unique_ptr<Group>> groups_;
  std::vector<Stat> stats_;
};

}  // namespace wafersim::sim::stats

#pragma once
// A table of windowed counters, written as CSV while the run goes (docs/trace.md): one row
// per window and key with a nonzero value, keys in ascending order within a window. When a
// run outgrows its window budget the recorder merges windows in pairs, and the table
// rewrites itself.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace wafersim::sim::trace {

class WindowTable {
 public:
  // How two windows' values combine when they merge: counts add, levels keep the larger.
  enum class Merge : std::uint8_t { Sum, Max };
  struct Column {
    std::string name, unit, description;
    Merge merge = Merge::Sum;
  };

  // Creates (truncates) `path`; the header is `window`, the keys, then the values.
  WindowTable(std::filesystem::path path, std::string name, std::string description, std::vector<Column> keys,
              std::vector<Column> values);
  ~WindowTable();
  WindowTable(const WindowTable&) = delete;
  WindowTable& operator=(const WindowTable&) = delete;

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::size_t key_count() const { return keys_.size(); }
  [[nodiscard]] std::size_t value_count() const { return values_.size(); }
  [[nodiscard]] std::uint64_t rows() const { return rows_; }

  // Adds a row (key_count() keys, value_count() values). Windows come in nondecreasing
  // order; rows of the same window and key combine (per column's Merge); rows whose values
  // are all zero are not written. The last window's rows are held until a later window
  // starts (or merge_pairs(), close()).
  void add(std::uint64_t window, const std::uint64_t* keys, const std::uint64_t* values);
  // Merges windows 2i and 2i+1 into window i (rows of one key combined per column's Merge).
  void merge_pairs();
  // Flushes and closes the file (add() afterwards is an error).
  void close();
  // Name, file name, description and columns, for meta.json.
  [[nodiscard]] nlohmann::ordered_json describe() const;

 private:
  void flush();
  void open_append();
  void combine(std::uint64_t* into, const std::uint64_t* values) const;
  // Sorts rows (flat, keys then values) by key and combines rows of equal keys.
  void canonical(std::vector<std::uint64_t>& rows) const;
  void append_rows(std::uint64_t window, const std::vector<std::uint64_t>& rows, std::string& out) const;
  void write_open_window();

  std::filesystem::path path_;
  std::string name_, description_;
  std::vector<Column> keys_, values_;
  std::ofstream out_;
  std::string buffer_;
  std::uint64_t rows_ = 0;  // written rows
  std::uint64_t open_window_ = 0;
  std::vector<std::uint64_t> open_;  // the last window's rows, flat (keys, then values)
  bool open_sorted_ = true;          // keys strictly ascending as added (the usual case)
  bool closed_ = false;
};

}  // namespace wafersim::sim::trace

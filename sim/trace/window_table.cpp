#include "sim/trace/window_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "sim/errors.h"

namespace wafersim::sim::trace {
namespace {

constexpr std::size_t kTableFlushBytes = 1 << 20;

[[noreturn]] void io_error(const std::filesystem::path& p, const char* what) {
  throw OutputError(fmt::format("cannot {} {}: {}", what, p.string(), std::strerror(errno)));
}

}  // namespace

WindowTable::WindowTable(std::filesystem::path path, std::string name, std::string description,
                         std::vector<Column> keys, std::vector<Column> values)
    : path_(std::move(path)),
      name_(std::move(name)),
      description_(std::move(description)),
      keys_(std::move(keys)),
      values_(std::move(values)) {
  out_.open(path_, std::ios::binary | std::ios::trunc);
  if (!out_) io_error(path_, "write");
  buffer_ = "window";
  for (const auto& c : keys_) buffer_ += "," + c.name;
  for (const auto& c : values_) buffer_ += "," + c.name;
  buffer_ += "\n";
}

WindowTable::~WindowTable() {
  try {
    close();
  } catch (...) {  // destructors do not throw; close() reports errors when called explicitly
  }
}

void WindowTable::combine(std::uint64_t* into, const std::uint64_t* values) const {
  for (std::size_t i = 0; i < values_.size(); ++i)
    into[i] = values_[i].merge == Merge::Sum ? into[i] + values[i] : std::max(into[i], values[i]);
}

void WindowTable::canonical(std::vector<std::uint64_t>& rows) const {
  const std::size_t nk = keys_.size(), stride = nk + values_.size();
  const std::size_t n = rows.size() / stride;
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  auto key_less = [&](std::size_t a, std::size_t b) {
    return std::lexicographical_compare(&rows[a * stride], &rows[a * stride + nk], &rows[b * stride],
                                        &rows[b * stride + nk]);
  };
  std::stable_sort(order.begin(), order.end(), key_less);
  std::vector<std::uint64_t> out;
  out.reserve(rows.size());
  for (std::size_t i : order) {
    const std::uint64_t* row = &rows[i * stride];
    if (!out.empty() && std::equal(row, row + nk, out.end() - static_cast<std::ptrdiff_t>(stride)))
      combine(&*(out.end() - static_cast<std::ptrdiff_t>(values_.size())), row + nk);
    else
      out.insert(out.end(), row, row + stride);
  }
  rows.swap(out);
}

void WindowTable::add(std::uint64_t window, const std::uint64_t* keys, const std::uint64_t* values) {
  if (closed_) throw std::logic_error("WindowTable " + name_ + ": add after close");
  if (window < open_window_)
    throw std::logic_error(fmt::format("WindowTable {}: window {} after window {}", name_, window, open_window_));
  bool nonzero = false;
  for (std::size_t i = 0; i < values_.size(); ++i) nonzero |= values[i] != 0;
  if (!nonzero) return;
  if (window != open_window_) {
    write_open_window();
    open_window_ = window;
  }
  const std::size_t nk = keys_.size();
  if (open_sorted_ && !open_.empty()) {
    const std::uint64_t* last = &open_[open_.size() - nk - values_.size()];
    open_sorted_ = std::lexicographical_compare(last, last + nk, keys, keys + nk);
  }
  open_.insert(open_.end(), keys, keys + nk);
  open_.insert(open_.end(), values, values + values_.size());
}

void WindowTable::append_rows(std::uint64_t window, const std::vector<std::uint64_t>& rows, std::string& out) const {
  const std::size_t stride = keys_.size() + values_.size();
  auto it = std::back_inserter(out);
  for (std::size_t r = 0; r < rows.size(); r += stride) {
    fmt::format_to(it, "{}", window);
    for (std::size_t i = 0; i < stride; ++i) fmt::format_to(it, ",{}", rows[r + i]);
    out += '\n';
  }
}

void WindowTable::write_open_window() {
  if (!open_sorted_) canonical(open_);
  append_rows(open_window_, open_, buffer_);
  rows_ += open_.size() / (keys_.size() + values_.size());
  open_.clear();
  open_sorted_ = true;
  if (buffer_.size() >= kTableFlushBytes) flush();
}

void WindowTable::flush() {
  out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  if (!out_) io_error(path_, "write");
  buffer_.clear();
}

void WindowTable::open_append() {
  out_.open(path_, std::ios::binary | std::ios::app);
  if (!out_) io_error(path_, "write");
}

void WindowTable::merge_pairs() {
  if (closed_) throw std::logic_error("WindowTable " + name_ + ": merge after close");
  // The open window's rows join the file's, then every row moves to window / 2; the last
  // merged window stays open (later rows of it combine with its rows).
  write_open_window();
  flush();
  out_.close();
  const std::size_t nk = keys_.size(), nv = values_.size();
  std::ifstream in(path_, std::ios::binary);
  if (!in) io_error(path_, "read");
  const std::filesystem::path tmp = path_.string() + ".merge";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) io_error(tmp, "write");
  std::string line;
  std::getline(in, line);
  out << line << "\n";
  std::uint64_t rows = 0;
  std::uint64_t window = 0;
  const std::size_t stride = nk + nv;
  auto emit = [&] {
    canonical(open_);
    std::string text;
    append_rows(window, open_, text);
    out << text;
    rows += open_.size() / stride;
    open_.clear();
  };
  std::vector<std::uint64_t> fields(1 + stride);
  while (std::getline(in, line)) {
    const char* p = line.c_str();
    for (auto& f : fields) {
      char* end = nullptr;
      f = std::strtoull(p, &end, 10);
      p = *end == ',' ? end + 1 : end;
    }
    const std::uint64_t w = fields[0] / 2;
    if (w != window) {
      emit();
      window = w;
    }
    open_.insert(open_.end(), fields.begin() + 1, fields.end());
  }
  // Windows only grow, so the open window (halved) is the last in the file or a later one.
  const std::uint64_t open = open_window_ / 2;
  if (window != open) emit();
  canonical(open_);
  open_sorted_ = true;
  out.close();
  if (!out) io_error(tmp, "write");
  in.close();
  std::error_code ec;
  std::filesystem::rename(tmp, path_, ec);
  if (ec) throw OutputError(fmt::format("cannot write {}: {}", path_.string(), ec.message()));
  rows_ = rows;
  open_window_ = open;
  open_append();
}

void WindowTable::close() {
  if (closed_) return;
  write_open_window();
  flush();
  out_.close();
  closed_ = true;
  if (!out_) io_error(path_, "write");
}

nlohmann::ordered_json WindowTable::describe() const {
  auto columns = [](const std::vector<Column>& cs) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (const auto& c : cs) {
      nlohmann::ordered_json j;
      j["name"] = c.name;
      j["unit"] = c.unit;
      j["description"] = c.description;
      j["merge"] = c.merge == Merge::Sum ? "sum" : "max";
      a.push_back(std::move(j));
    }
    return a;
  };
  nlohmann::ordered_json j;
  j["file"] = path_.filename().string();
  j["description"] = description_;
  j["keys"] = columns(keys_);
  j["values"] = columns(values_);
  j["rows"] = rows_;
  return j;
}

}  // namespace wafersim::sim::trace

#include "sim/trace/window_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "sim/errors.h"

namespace wafersim::sim::trace {
namespace {

constexpr std::size_t kFlushBytes = 1 << 20;

[[noreturn]] void io_error(const std::filesystem::path& p, const char* what) {
  throw InputError(fmt::format("cannot {} {}: {}", what, p.string(), std::strerror(errno)));
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

void WindowTable::combine(std::vector<std::uint64_t>& into, const std::uint64_t* values) const {
  for (std::size_t i = 0; i < values_.size(); ++i)
    into[i] = values_[i].merge == Merge::Sum ? into[i] + values[i] : std::max(into[i], values[i]);
}

void WindowTable::add(std::uint64_t window, const std::uint64_t* keys, const std::uint64_t* values) {
  if (closed_) throw std::logic_error("WindowTable " + name_ + ": add after close");
  if (window < open_window_) throw std::logic_error(fmt::format("WindowTable {}: window {} after window {}", name_, window, open_window_));
  bool nonzero = false;
  for (std::size_t i = 0; i < values_.size(); ++i) nonzero |= values[i] != 0;
  if (!nonzero) return;
  if (window != open_window_) {
    write_open_window();
    open_window_ = window;
  }
  auto [it, fresh] = open_.try_emplace(std::vector<std::uint64_t>(keys, keys + keys_.size()),
                                       std::vector<std::uint64_t>(values_.size(), 0));
  combine(it->second, values);
}

void WindowTable::write_open_window() {
  auto it = std::back_inserter(buffer_);
  for (const auto& [k, v] : open_) {
    fmt::format_to(it, "{}", open_window_);
    for (auto x : k) fmt::format_to(it, ",{}", x);
    for (auto x : v) fmt::format_to(it, ",{}", x);
    buffer_ += '\n';
    ++rows_;
  }
  open_.clear();
  if (buffer_.size() >= kFlushBytes) flush();
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
  auto emit = [&] {
    std::string text;
    auto it = std::back_inserter(text);
    for (const auto& [k, v] : open_) {
      fmt::format_to(it, "{}", window);
      for (auto x : k) fmt::format_to(it, ",{}", x);
      for (auto x : v) fmt::format_to(it, ",{}", x);
      text += '\n';
      ++rows;
    }
    out << text;
    open_.clear();
  };
  std::vector<std::uint64_t> fields(1 + nk + nv);
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
    auto [it, fresh] = open_.try_emplace(
        std::vector<std::uint64_t>(fields.begin() + 1, fields.begin() + 1 + static_cast<std::ptrdiff_t>(nk)),
        std::vector<std::uint64_t>(nv, 0));
    combine(it->second, fields.data() + 1 + nk);
  }
  // Windows only grow, so the open window (halved) is the last in the file or a later one.
  const std::uint64_t open = open_window_ / 2;
  if (window != open) emit();
  out.close();
  if (!out) io_error(tmp, "write");
  in.close();
  std::error_code ec;
  std::filesystem::rename(tmp, path_, ec);
  if (ec) throw InputError(fmt::format("cannot write {}: {}", path_.string(), ec.message()));
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

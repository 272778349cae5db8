#include "sim/trace/chrome_trace.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "sim/errors.h"

namespace wafersim::sim::trace {
namespace {

constexpr std::size_t kTraceFlushBytes = 1 << 20;

std::string args_json(const Args& args) {
  std::string out = "{";
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (i) out += ",";
    out += json_string(args[i].key) + ":";
    if (!args[i].numeric)
      out += json_string(args[i].text);
    else if (std::isfinite(args[i].number))
      out += fmt::format("{}", args[i].number);
    else
      out += "null";
  }
  return out + "}";
}

// Slices end where they end: start and end round to the nanosecond each, and the duration
// is their difference, so slices that follow each other still do.
std::uint64_t rounded_ns(Picos t) { return (t.count() + 500) / 1000 * 1000; }

}  // namespace

std::string micros(Picos t) {
  const std::uint64_t ns = (t.count() + 500) / 1000;
  return fmt::format("{}.{:03}", ns / 1000, ns % 1000);
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\')
      out += std::string("\\") + ch;
    else if (ch == '\n')
      out += "\\n";
    else if (u < 0x20)
      out += fmt::format("\\u{:04x}", u);
    else
      out += ch;
  }
  return out + "\"";
}

ChromeTrace::ChromeTrace(std::filesystem::path path, std::uint64_t max_events)
    : path_(std::move(path)), max_events_(max_events) {
  out_.open(path_, std::ios::binary | std::ios::trunc);
  if (!out_) throw OutputError(fmt::format("cannot write {}: {}", path_.string(), std::strerror(errno)));
  buffer_ = "{\"traceEvents\":[\n";
}

ChromeTrace::~ChromeTrace() {
  try {
    close();
  } catch (...) {  // close() reports errors when called explicitly
  }
}

void ChromeTrace::emit(const std::string& event) {
  if (closed_) throw std::logic_error("ChromeTrace: event after close");
  if (!first_) buffer_ += ",\n";
  first_ = false;
  buffer_ += event;
  if (buffer_.size() >= kTraceFlushBytes) {
    out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }
}

bool ChromeTrace::admit() {
  if (events_ >= max_events_) {
    ++dropped_;
    return false;
  }
  ++events_;
  return true;
}

std::uint32_t ChromeTrace::process(std::string_view name) {
  auto it = processes_.find(name);
  if (it != processes_.end()) return it->second;
  const auto pid = static_cast<std::uint32_t>(processes_.size() + 1);
  processes_.emplace(std::string(name), pid);
  emit(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})", pid,
                   json_string(name)));
  emit(
      fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", pid, pid));
  return pid;
}

TrackId ChromeTrace::track(std::string_view process_name, std::string_view thread) {
  const std::uint32_t pid = process(process_name);
  auto key = std::make_pair(pid, std::string(thread));
  auto it = threads_.find(key);
  if (it != threads_.end()) return TrackId{pid, it->second};
  const std::uint32_t tid = ++thread_count_[pid];
  threads_.emplace(std::move(key), tid);
  emit(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", pid, tid,
                   json_string(thread)));
  emit(fmt::format(R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})", pid, tid,
                   tid));
  return TrackId{pid, tid};
}

void ChromeTrace::slice(TrackId t, std::string_view name, std::string_view category, Picos start, Picos end,
                        const Args& args) {
  if (end < start) throw std::logic_error("ChromeTrace: a slice ends before it starts");
  if (!admit()) return;
  emit(fmt::format(R"({{"ph":"X","name":{},"cat":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{}}})", json_string(name),
                   json_string(category), t.process, t.thread, micros(start),
                   micros(Picos(rounded_ns(end) - rounded_ns(start))), args_json(args)));
}

void ChromeTrace::instant(TrackId t, std::string_view name, Picos at, const Args& args) {
  if (!admit()) return;
  emit(fmt::format(R"({{"ph":"i","s":"t","name":{},"pid":{},"tid":{},"ts":{},"args":{}}})", json_string(name),
                   t.process, t.thread, micros(at), args_json(args)));
}

void ChromeTrace::counter(std::string_view process_name, std::string_view name, Picos at, double value) {
  const std::uint32_t pid = process(process_name);
  if (!admit()) return;
  emit(fmt::format(R"({{"ph":"C","name":{},"pid":{},"tid":0,"ts":{},"args":{{"value":{}}}}})", json_string(name), pid,
                   micros(at), std::isfinite(value) ? fmt::format("{}", value) : "0"));
}

void ChromeTrace::close() {
  if (closed_) return;
  buffer_ += fmt::format("\n],\"otherData\":{{\"generator\":\"wafersim\",\"events\":{},\"dropped_events\":{}}}}}\n",
                         events_, dropped_);
  out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  buffer_.clear();
  out_.close();
  closed_ = true;
  if (!out_) throw OutputError(fmt::format("cannot write {}: {}", path_.string(), std::strerror(errno)));
}

}  // namespace wafersim::sim::trace

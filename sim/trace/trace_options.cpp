#include "sim/trace/trace_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "sim/errors.h"

namespace wafersim::sim::trace {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::uint32_t parse_coord(const std::string& s, const std::string& text, const std::string& option) {
  const std::string t = trim(s);
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(t.c_str(), &end, 10);
  if (t.empty() || *end || errno || v > 65535 || t[0] == '-' || t[0] == '+')
    throw InputError(
        fmt::format("{} '{}': '{}' is not a coordinate (0 .. 65535); expected X,Y or X0,Y0:X1,Y1", option, text, t));
  return static_cast<std::uint32_t>(v);
}

std::pair<std::uint32_t, std::uint32_t> parse_point(const std::string& s, const std::string& text,
                                                    const std::string& option) {
  const auto comma = s.find(',');
  if (comma == std::string::npos || s.find(',', comma + 1) != std::string::npos)
    throw InputError(fmt::format("{} '{}': expected X,Y or X0,Y0:X1,Y1", option, text));
  return {parse_coord(s.substr(0, comma), text, option), parse_coord(s.substr(comma + 1), text, option)};
}

}  // namespace

std::string Rect::str() const {
  if (x0 == x1 && y0 == y1) return fmt::format("{},{}", x0, y0);
  return fmt::format("{},{}:{},{}", x0, y0, x1, y1);
}

void parse_kinds(const std::string& text, TraceOptions& o, const std::string& option) {
  std::stringstream ss(text);
  std::string item;
  bool any = false;
  while (std::getline(ss, item, ',')) {
    const std::string w = trim(item);
    any = true;
    if (w == "windows") {
      o.windows = true;
    } else if (w == "timeline") {
      o.timeline = true;
    } else if (w == "vcd") {
      o.vcd = true;
    } else if (w == "all") {
      o.windows = o.timeline = o.vcd = true;
    } else if (w == "none") {
      o.windows = o.timeline = o.vcd = false;
    } else {
      throw InputError(fmt::format("{} '{}': unknown trace '{}'; expected a list of windows, timeline, vcd, all, none",
                                   option, text, w));
    }
  }
  if (!any) throw InputError(fmt::format("{}: empty; expected a list of windows, timeline, vcd, all, none", option));
}

Rect parse_rect(const std::string& text, const std::string& option) {
  const std::string t = trim(text);
  const auto colon = t.find(':');
  Rect r;
  if (colon == std::string::npos) {
    const auto [x, y] = parse_point(t, text, option);
    r = Rect{x, y, x, y};
  } else {
    const auto [ax, ay] = parse_point(t.substr(0, colon), text, option);
    const auto [bx, by] = parse_point(t.substr(colon + 1), text, option);
    r = Rect{std::min(ax, bx), std::min(ay, by), std::max(ax, bx), std::max(ay, by)};
  }
  return r;
}

std::vector<Rect> parse_rects(const std::string& text, const std::string& option) {
  std::vector<Rect> out;
  std::string item;
  for (char ch : text + ";") {
    if (ch == ';' || ch == ' ') {
      if (!trim(item).empty()) out.push_back(parse_rect(item, option));
      item.clear();
    } else {
      item += ch;
    }
  }
  if (out.empty())
    throw InputError(fmt::format("{}: empty; expected X,Y or X0,Y0:X1,Y1 (several separated by ';')", option));
  return out;
}

ByColor parse_by_color(const std::string& text, const std::string& option) {
  if (text == "auto") return ByColor::Auto;
  if (text == "on") return ByColor::On;
  if (text == "off") return ByColor::Off;
  throw InputError(fmt::format("{} '{}': expected auto, on or off", option, text));
}

void check_inside(const Rect& r, std::uint32_t width, std::uint32_t height, const std::string& option) {
  if (r.x1 >= width || r.y1 >= height)
    throw InputError(fmt::format("{} {}: outside the {} x {} grid (x 0 .. {}, y 0 .. {})", option, r.str(), width,
                                 height, width - 1, height - 1));
}

std::uint64_t auto_window_cycles(std::uint64_t expected_cycles) {
  if (expected_cycles == 0) return 1000;
  const std::uint64_t want = (expected_cycles + 99) / 100;  // at most 100 windows
  for (std::uint64_t scale = 1;; scale *= 10)
    for (std::uint64_t m : {1, 2, 5})
      if (m * scale >= want) return m * scale;
}

Rect default_probe_rect(std::uint32_t width, std::uint32_t height) {
  const std::uint32_t cx = width / 2, cy = height / 2;
  Rect r;
  r.x0 = cx > 0 ? cx - 1 : 0;
  r.y0 = cy > 0 ? cy - 1 : 0;
  r.x1 = cx + 1 < width ? cx + 1 : width - 1;
  r.y1 = cy + 1 < height ? cy + 1 : height - 1;
  return r;
}

}  // namespace wafersim::sim::trace

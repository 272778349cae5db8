#include "platforms/failure_spec.h"

#include <fmt/format.h>

#include <charconv>

#include "sim/errors.h"

namespace wafersim::platforms {
namespace {

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw sim::InputError(
      fmt::format("--fail '{}': {}; expected link:X,Y,DIR@CYCLE (DIR north, east, south or west), pe:X,Y@CYCLE or "
                  "system:K@STEP",
                  text, why));
}

std::uint64_t number(const std::string& text, std::string_view s, const char* what) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) bad(text, fmt::format("'{}' is not a {}", s, what));
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (std::size_t at = 0;;) {
    const std::size_t next = s.find(sep, at);
    out.push_back(s.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) return out;
    at = next + 1;
  }
}

}  // namespace

FailureSpec parse_failure(const std::string& text) {
  FailureSpec f;
  f.text = text;
  const std::size_t colon = text.find(':'), at = text.rfind('@');
  if (colon == std::string::npos || at == std::string::npos || at < colon) bad(text, "no KIND:WHAT@WHEN");
  const std::string kind = text.substr(0, colon);
  const std::string_view what = std::string_view(text).substr(colon + 1, at - colon - 1);
  const std::string_view when = std::string_view(text).substr(at + 1);
  const auto parts = split(what, ',');
  if (kind == "system") {
    f.kind = FailureSpec::Kind::System;
    if (parts.size() != 1) bad(text, "a system is one number");
    const std::uint64_t k = number(text, parts[0], "system number");
    if (k > UINT32_MAX) bad(text, "no cluster has that many systems");
    f.system = static_cast<std::uint32_t>(k);
    f.at = number(text, when, "step number");
    return f;
  }
  if (kind != "link" && kind != "pe") bad(text, fmt::format("unknown kind '{}'", kind));
  f.kind = kind == "link" ? FailureSpec::Kind::Link : FailureSpec::Kind::Pe;
  if (parts.size() != (kind == "link" ? 3u : 2u)) bad(text, kind == "link" ? "a link is X,Y,DIR" : "a PE is X,Y");
  f.x = static_cast<std::uint32_t>(number(text, parts[0], "column"));
  f.y = static_cast<std::uint32_t>(number(text, parts[1], "row"));
  if (kind == "link") {
    const auto p = fabric::parse_port(parts[2]);
    if (!p || *p == fabric::Port::Ramp) bad(text, fmt::format("'{}' is not north, east, south or west", parts[2]));
    f.port = *p;
  }
  f.at = number(text, when, "cycle");
  return f;
}

std::vector<FailureSpec> parse_failures(const std::vector<std::string>& texts) {
  std::vector<FailureSpec> out;
  for (const auto& t : texts) out.push_back(parse_failure(t));
  return out;
}

fabric::Outage to_outage(const FailureSpec& f, const fabric::MeshGeometry& g) {
  if (f.kind == FailureSpec::Kind::System)
    throw sim::InputError(fmt::format("--fail '{}': a system fails in 'wafersim train' only", f.text));
  if (!g.contains(f.x, f.y))
    throw sim::InputError(
        fmt::format("--fail '{}': PE ({}, {}) lies outside the {} x {} grid", f.text, f.x, f.y, g.width(), g.height()));
  fabric::Outage o;
  o.cycle = f.at;
  o.router = g.router(f.x, f.y);
  o.port = f.kind == FailureSpec::Kind::Pe ? fabric::Port::Ramp : f.port;
  if (!o.pe() && g.neighbour(o.router, o.port) == fabric::MeshGeometry::kNone)
    throw sim::InputError(fmt::format("--fail '{}': PE ({}, {}) has no neighbour to the {}", f.text, f.x, f.y,
                                      fabric::port_name(o.port)));
  return o;
}

}  // namespace wafersim::platforms

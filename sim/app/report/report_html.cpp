#include "sim/app/report/report_html.h"

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wafersim::generated {
std::vector<std::pair<std::string_view, std::string_view>> report_assets();
}

namespace wafersim::app::report {
namespace {

std::string_view asset(std::string_view name) {
  for (const auto& [path, text] : generated::report_assets())
    if (path.size() >= name.size() && path.substr(path.size() - name.size()) == name) return text;
  throw std::logic_error("report asset missing: " + std::string(name));
}

void replace(std::string& s, std::string_view key, std::string_view value) {
  const auto at = s.find(key);
  if (at == std::string::npos) throw std::logic_error("report template has no " + std::string(key));
  s.replace(at, key.size(), value);
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string render_html(const nlohmann::ordered_json& data) {
  std::string page(asset("report.html"));
  // Inside <script> the JSON must not contain "</script" or "<!--": every '<' (only ever
  // inside a JSON string) becomes the escape \u003c.
  const std::string raw = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string escaped;
  escaped.reserve(raw.size());
  for (char c : raw) {
    if (c == '<')
      escaped += "\\u003c";
    else
      escaped += c;
  }
  const std::string title = "wafersim report: " + data.at("run").value("platform", std::string("run"));
  // Substitute the data last: it is the only part that could contain the other markers.
  replace(page, "@TITLE@", html_escape(title));
  replace(page, "@STYLE@", asset("report.css"));
  replace(page, "@SCRIPT@",
          std::string(asset("report.js")) + "\n" + std::string(asset("report_traffic.js")) + "\n" +
              std::string(asset("report_causes.js")));
  replace(page, "@DATA@", escaped);
  return page;
}

}  // namespace wafersim::app::report

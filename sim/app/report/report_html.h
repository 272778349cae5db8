#pragma once
// The report as one self-contained HTML file: the page template, its style and script
// (assets/, compiled into the binary) and the run's data inlined; nothing is fetched.

#include <string>

#include <nlohmann/json.hpp>

namespace wafersim::app::report {

std::string render_html(const nlohmann::ordered_json& data);

}  // namespace wafersim::app::report

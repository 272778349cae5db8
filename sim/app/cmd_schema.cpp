// `wafersim schema`: every platform key with its default, unit and range.

#include <fmt/format.h>

#include <iostream>

#include "platforms/platform_spec.h"
#include "sim/app/cli.h"

namespace wafersim::app {

void add_schema_command(CLI::App& app) {
  auto markdown = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand("schema", "list every platform key with its type, default, range and meaning");
  sub->add_flag("--markdown", *markdown, "print a Markdown table (docs/platform-config.md is this output)");
  sub->callback([markdown] {
    if (*markdown) {
      std::cout << platforms::platform_schema_markdown();
      return;
    }
    for (const auto& f : platforms::platform_schema())
      std::cout << fmt::format("{:<40} {:<10} default {:<14} range {}  - {}\n", f.path, f.type, f.default_text,
                               f.range, f.description);
  });
}

}  // namespace wafersim::app

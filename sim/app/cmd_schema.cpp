// `wafersim schema`: every platform key with its default, unit and range.

#include <fmt/format.h>

#include <iostream>

#include "models/model_spec.h"
#include "platforms/platform_spec.h"
#include "sim/app/cli.h"

namespace wafersim::app {

void add_schema_command(CLI::App& app) {
  struct Args {
    bool markdown = false;
    std::string kind = "platform";
  };
  auto args = std::make_shared<Args>();
  CLI::App* sub =
      app.add_subcommand("schema", "list every key of a file kind with its type, default, range and meaning");
  sub->add_option("kind", args->kind, "platform or model")
      ->check(CLI::IsMember({"platform", "model"}))
      ->capture_default_str();
  sub->add_flag("--markdown", args->markdown,
                "print a Markdown table (docs/platform-config.md and docs/model-config.md hold this output)");
  sub->footer(
      "Examples:\n"
      "  wafersim schema platform\n"
      "  wafersim schema model --markdown");
  sub->callback([args] {
    auto docs = args->kind == "model" ? models::model_schema() : platforms::platform_schema();
    if (args->markdown) {
      std::cout << sim::config::markdown_table(docs);
      return;
    }
    for (const auto& f : docs)
      std::cout << fmt::format("{:<40} {:<10} default {:<14} range {}  - {}\n", f.path, f.type, f.default_text, f.range,
                               f.description);
  });
}

}  // namespace wafersim::app

#pragma once
// Reads configuration files (YAML) into located trees: `base:` inheritance, built-in
// files, and `--set key.path=value` overrides.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/config/diagnostics.h"
#include "sim/config/node.h"

namespace wafersim::sim::config {

// What aliases (YAML's *name) may add to a document when expanded: nodes, and bytes of scalar
// text. Beyond either, the document is refused ("billion laughs").
inline constexpr std::uint64_t kMaxAliasNodes = 100000;
inline constexpr std::uint64_t kMaxAliasBytes = 4ull << 20;

// Files compiled into the binary, by path relative to the repository root
// (e.g. "platforms/wse2.yaml").
using BuiltinFiles = std::vector<std::pair<std::string_view, std::string_view>>;

// Contract: every function here either returns a well-formed tree or throws ConfigError
// naming the file, line and column; none of them crashes on malformed input.
class Loader {
 public:
  // `builtins` are searched when a path does not exist on disk; `builtin_dir` is the
  // folder a bare preset name refers to (e.g. "platforms" so that "wse2" finds
  // "platforms/wse2.yaml").
  explicit Loader(const BuiltinFiles* builtins = nullptr, std::string builtin_dir = {});

  // Parses YAML text into a located tree. An empty document, several documents,
  // duplicate keys, anchors/aliases forming cycles, aliases expanding beyond the limits
  // above, text over kMaxYamlBytes and bytes that are not UTF-8 are errors.
  static Node parse(std::string_view text, const std::string& file_name);

  // Loads `path` (a file or a built-in name), follows `base:` chains (relative to the
  // including file, cycles detected) and merges each file over its base.
  [[nodiscard]] Node load(const std::string& path) const;
  // As load(), for text already in memory; `name` is used in diagnostics and to resolve
  // a relative `base:`.
  [[nodiscard]] Node load_text(std::string_view text, const std::string& name) const;

  // Applies "a.b.c=value" overrides in order; the value is read as YAML. Diagnostics
  // point at "<command line>:N:COL" where N counts the overrides from 1.
  static void apply_overrides(Node& root, const std::vector<std::string>& assignments);

  // Whether `path` names a readable file or a built-in, and its display name.
  [[nodiscard]] bool exists(const std::string& path) const;

 private:
  struct Text {
    std::string name;  // display name used in diagnostics
    std::string key;   // identity for cycle detection
    std::string text;
    bool builtin = false;
  };
  bool find(const std::string& path, Text& out) const;
  Node load_chain(const std::string& path, const Location& from, std::vector<std::string>& chain) const;
  Node resolve_base(Node root, const std::string& name, std::vector<std::string>& chain) const;

  const BuiltinFiles* builtins_;
  std::string builtin_dir_;
};

}  // namespace wafersim::sim::config

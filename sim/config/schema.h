#pragma once
// The resolved configuration layer: typed, validated, unit-converted values read from a
// located tree against declared keys. One declaration per key serves three uses:
// resolving a config, writing the resolved config back (every default filled in), and
// listing every key with its default, unit and range for the documentation.

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sim/config/diagnostics.h"
#include "sim/config/node.h"
#include "sim/types.h"
#include "sim/units/quantity.h"

namespace wafersim::sim::config {

// One documented key, as declared by a schema.
struct FieldDoc {
  std::string path;         // "wafer.pe.sram.size"
  std::string type;         // "integer", "frequency", "choice", ...
  std::string default_text; // formatted default
  std::string range;        // "1 .. 24", "one of: 1:4, 2x1:2"
  std::string description;
};

class Resolver;

// The documentation of a schema as a Markdown table (key, type, default, range, meaning).
std::string markdown_table(const std::vector<FieldDoc>& docs);

// A handle on one mapping being resolved.
// Contract: every getter declares a key (name, default, range, description), reads it if
// present, and returns its converted value, or the default when the key is absent or wrong.
// Wrong values are recorded as diagnostics, never thrown from a getter; Resolver::finish()
// throws them all at once, together with keys that no getter declared.
class Section {
 public:
  std::int64_t integer(std::string_view name, std::int64_t def, std::int64_t min, std::int64_t max,
                       std::string_view doc);
  double real(std::string_view name, double def, double min, double max, std::string_view doc);
  bool boolean(std::string_view name, bool def, std::string_view doc);
  std::string choice(std::string_view name, std::string_view def, std::initializer_list<std::string_view> options,
                     std::string_view doc);
  std::string text(std::string_view name, std::string_view def, std::string_view doc);

  units::Frequency frequency(std::string_view name, units::Frequency def, units::Frequency min,
                             units::Frequency max, std::string_view doc);
  units::DataSize size(std::string_view name, units::DataSize def, units::DataSize min, units::DataSize max,
                       std::string_view doc);
  units::Bandwidth bandwidth(std::string_view name, units::Bandwidth def, units::Bandwidth min,
                             units::Bandwidth max, std::string_view doc);
  units::Duration duration(std::string_view name, units::Duration def, units::Duration min, units::Duration max,
                           std::string_view doc);
  Cycle cycles(std::string_view name, Cycle def, Cycle min, Cycle max, std::string_view doc);
  units::ParamRate param_rate(std::string_view name, units::ParamRate def, units::ParamRate min,
                              units::ParamRate max, std::string_view doc);
  units::Energy energy(std::string_view name, units::Energy def, units::Energy min, units::Energy max,
                       std::string_view doc);
  units::Power power(std::string_view name, units::Power def, units::Power min, units::Power max, std::string_view doc);

  // A nested mapping (absent means all of its defaults).
  Section section(std::string_view name, std::string_view doc);
  // A list of mappings (absent means an empty list); each element resolves like a section.
  // When collecting documentation (no document), one element stands for all ("name[]").
  std::vector<Section> sections(std::string_view name, std::string_view doc);
  // A list of integers in [min, max], e.g. a tensor shape.
  std::vector<std::int64_t> integers(std::string_view name, const std::vector<std::int64_t>& def, std::int64_t min,
                                     std::int64_t max, std::string_view doc);
  // A list of strings, e.g. the names of a layer's inputs.
  std::vector<std::string> texts(std::string_view name, const std::vector<std::string>& def, std::string_view doc);

  // Leaves key `name` out of the resolved document (a key that does not apply in this case).
  void omit(std::string_view name);

  // Records an error about key `name` of this mapping (a cross-field check); the location
  // is the key's value when present, else the mapping's.
  void error(std::string_view name, const std::string& message);
  // Where key `name` was written (or the mapping when absent).
  [[nodiscard]] Location location(std::string_view name) const;
  [[nodiscard]] std::string path(std::string_view name) const;
  [[nodiscard]] bool has(std::string_view name) const;

 private:
  friend class Resolver;

// The documentation of a schema as a Markdown table (key, type, default, range, meaning).
std::string markdown_table(const std::vector<FieldDoc>& docs);
  Section(Resolver* r, std::size_t scope) : resolver_(r), scope_(scope) {}
  const Node* declare(std::string_view name, std::string_view type, const std::string& def,
                      const std::string& range, std::string_view doc);
  void emit(std::string_view name, const std::string& text, bool quote = false);
  void emit_node(std::string_view name, Node value);
  Node* resolved_scope();
  const Node* declare_list(std::string_view name, std::string_view type, const std::string& def,
                           const std::string& range, std::string_view doc);
  double quantity(std::string_view name, double def, double min, double max, units::Dimension dim,
                  std::string_view doc);

  Resolver* resolver_;
  std::size_t scope_;
};

// Resolves one configuration document. Construct it on a merged tree (or on nothing, to
// collect documentation), hand root() to the schema, then call finish().
class Resolver {
 public:
  explicit Resolver(const Node* root);
  Section root();
  // Throws ConfigError with every diagnostic, including unknown keys (with a suggestion).
  void finish();

  // The resolved document: every declared key with its final value.
  [[nodiscard]] const Node& resolved() const { return resolved_; }
  [[nodiscard]] const std::vector<FieldDoc>& docs() const { return docs_; }
  void add_diagnostic(Diagnostic d) { diagnostics_.push_back(std::move(d)); }

  // Writes the resolved document as YAML with each key's description as a comment.
  [[nodiscard]] std::string resolved_yaml(const std::string& header) const;

 private:
  friend class Section;
  struct Scope {
    const Node* node = nullptr;  // may be null when absent
    Node* out = nullptr;
    std::string path;
    Location location;
    std::vector<std::string> declared;
  };
  std::deque<Scope> scopes_;
  Node resolved_;
  std::vector<FieldDoc> docs_;
  std::vector<Diagnostic> diagnostics_;
  std::vector<std::pair<std::string, std::string>> comments_;  // path -> description
};

}  // namespace wafersim::sim::config

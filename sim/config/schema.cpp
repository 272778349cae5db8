#include "sim/config/schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace wafersim::sim::config {
namespace {

std::string join_path(const std::string& a, std::string_view b) {
  return a.empty() ? std::string(b) : a + "." + std::string(b);
}

bool parse_int(const std::string& s, std::int64_t& out) {
  if (s.empty()) return false;
  std::size_t i = 0;
  if (s[0] == '-' || s[0] == '+') i = 1;
  if (i >= s.size()) return false;
  for (std::size_t j = i; j < s.size(); ++j)
    if (s[j] < '0' || s[j] > '9') return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0') return false;
  out = v;
  return true;
}

bool parse_real(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno == ERANGE || *end != '\0' || !std::isfinite(v)) return false;
  // Reject hex floats, "inf", "nan" and the like: plain decimal only.
  for (char c : s)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+'))
      return false;
  out = v;
  return true;
}

bool needs_quotes(const std::string& s) {
  if (s.empty()) return true;
  if (s.front() == ' ' || s.back() == ' ') return true;
  for (char c : s)
    if (std::string_view(":#{}[],&*!|>'\"%@`\\").find(c) != std::string_view::npos) return true;
  return false;
}

std::string scalar_text(const Node& n) {
  std::string v = n.text();
  if (needs_quotes(v) || n.quoted()) {
    std::string q;
    for (char ch : v) {
      if (ch == '"' || ch == '\\') q += '\\';
      q += ch;
    }
    v = "\"" + q + "\"";
  }
  return v;
}

// "graph.layers[3].kind" -> "graph.layers[].kind": list elements share their documentation.
std::string doc_path(const std::string& p) {
  std::string out;
  bool in_index = false;
  for (char c : p) {
    if (c == '[') in_index = true;
    if (in_index && c != '[' && c != ']') continue;
    if (c == ']') in_index = false;
    out += c;
  }
  return out;
}

void write_yaml(const Node& n, const std::string& path, int indent,
                const std::vector<std::pair<std::string, std::string>>& comments, std::string& out) {
  for (const auto& e : n.entries()) {
    std::string p = join_path(path, e.key);
    const std::string dp = doc_path(p);
    auto c = std::find_if(comments.begin(), comments.end(), [&](const auto& kv) { return kv.first == dp; });
    std::string pad(static_cast<std::size_t>(indent), ' ');
    if (e.value.is_map()) {
      if (c != comments.end() && !c->second.empty()) out += fmt::format("{}# {}\n", pad, c->second);
      out += fmt::format("{}{}:\n", pad, e.key);
      write_yaml(e.value, p, indent + 2, comments, out);
    } else if (e.value.is_sequence() &&
               std::all_of(e.value.items().begin(), e.value.items().end(), [](const Node& i) { return i.is_map(); }) &&
               !e.value.items().empty()) {
      if (c != comments.end() && !c->second.empty()) out += fmt::format("{}# {}\n", pad, c->second);
      out += fmt::format("{}{}:\n", pad, e.key);
      for (std::size_t i = 0; i < e.value.items().size(); ++i) {
        std::string item;
        write_yaml(e.value.items()[i], fmt::format("{}[{}]", p, i), indent + 4, comments, item);
        if (item.empty()) {
          out += pad + "  - {}\n";
          continue;
        }
        std::size_t line_start = 0;
        while (line_start < item.size() && item.compare(line_start + static_cast<std::size_t>(indent) + 4, 1, "#") == 0)
          line_start = item.find('\n', line_start) + 1;
        item.replace(line_start, static_cast<std::size_t>(indent) + 4, pad + "  - ");
        out += item;
      }
    } else {
      std::string v;
      if (e.value.is_sequence()) {
        v = "[";
        for (std::size_t i = 0; i < e.value.items().size(); ++i)
          v += (i ? ", " : "") + scalar_text(e.value.items()[i]);
        v += "]";
      } else {
        v = scalar_text(e.value);
      }
      std::string line = fmt::format("{}{}: {}", pad, e.key, v);
      if (c != comments.end() && !c->second.empty()) {
        std::size_t width = std::max<std::size_t>(line.size() + 2, 44);
        line.resize(width, ' ');
        line += "# " + c->second;
      }
      out += line + "\n";
    }
  }
}

}  // namespace

std::string markdown_table(const std::vector<FieldDoc>& docs) {
  std::string out =
      "| key | type | default | valid range | meaning |\n"
      "|---|---|---|---|---|\n";
  for (const auto& f : docs)
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", f.path, f.type,
                       f.default_text.empty() ? "(empty)" : "`" + f.default_text + "`", f.range, f.description);
  return out;
}

Resolver::Resolver(const Node* root) : resolved_(Node::map(Location{})) {
  Scope s;
  s.node = root;
  s.location = root ? root->location() : Location{};
  scopes_.push_back(std::move(s));
}

Section Resolver::root() { return Section(this, 0); }

void Resolver::finish() {
  for (const auto& s : scopes_) {
    if (!s.node || !s.node->is_map()) continue;
    for (const auto& e : s.node->entries()) {
      if (std::find(s.declared.begin(), s.declared.end(), e.key) != s.declared.end()) continue;
      std::string hint = closest_match(e.key, s.declared);
      std::string msg = hint.empty() ? "unknown key" : fmt::format("unknown key; did you mean '{}'?", hint);
      if (hint.empty() && !s.declared.empty()) {
        std::string valid;
        for (const auto& d : s.declared) valid += (valid.empty() ? "" : ", ") + d;
        msg += fmt::format(" (valid keys here: {})", valid);
      }
      diagnostics_.push_back(Diagnostic{e.key_location, join_path(s.path, e.key), msg});
    }
  }
  if (!diagnostics_.empty()) {
    std::stable_sort(diagnostics_.begin(), diagnostics_.end(), [](const Diagnostic& a, const Diagnostic& b) {
      if (a.location.file != b.location.file) return a.location.file < b.location.file;
      if (a.location.line != b.location.line) return a.location.line < b.location.line;
      return a.location.column < b.location.column;
    });
    throw ConfigError(diagnostics_);
  }
}

std::string Resolver::resolved_yaml(const std::string& header) const {
  std::string out;
  std::size_t start = 0;
  while (start < header.size()) {
    std::size_t nl = header.find('\n', start);
    out += "# " + header.substr(start, nl == std::string::npos ? std::string::npos : nl - start) + "\n";
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  write_yaml(resolved_, "", 0, comments_, out);
  return out;
}

// ---- Section -------------------------------------------------------------------------

std::string Section::path(std::string_view name) const { return join_path(resolver_->scopes_[scope_].path, name); }

bool Section::has(std::string_view name) const {
  const auto& s = resolver_->scopes_[scope_];
  return s.node && s.node->is_map() && s.node->find(std::string(name));
}

Location Section::location(std::string_view name) const {
  const auto& s = resolver_->scopes_[scope_];
  if (s.node && s.node->is_map())
    if (const Node* n = s.node->find(std::string(name))) return n->location();
  return s.location;
}

void Section::error(std::string_view name, const std::string& message) {
  resolver_->add_diagnostic(Diagnostic{location(name), path(name), message});
}

const Node* Section::declare(std::string_view name, std::string_view type, const std::string& def,
                             const std::string& range, std::string_view doc) {
  auto& s = resolver_->scopes_[scope_];
  s.declared.emplace_back(name);
  std::string p = doc_path(path(name));
  resolver_->docs_.push_back(FieldDoc{p, std::string(type), def, range, std::string(doc)});
  resolver_->comments_.emplace_back(p, std::string(doc));
  if (!s.node || !s.node->is_map()) return nullptr;
  const Node* n = s.node->find(std::string(name));
  if (n && n->is_null()) {
    error(name, fmt::format("expected a {} value, found nothing", type));
    return nullptr;
  }
  if (n && !n->is_scalar()) {
    error(name, fmt::format("expected a {} value, found {}", type, n->kind_name()));
    return nullptr;
  }
  return n;
}

void Section::emit(std::string_view name, const std::string& text, bool quote) {
  Node v = Node::scalar(text, Location{});
  v.set_quoted(quote);
  emit_node(name, std::move(v));
}

void Section::emit_node(std::string_view name, Node value) {
  if (Node* scope = resolved_scope()) scope->set(std::string(name), Location{}, std::move(value));
}

void Section::omit(std::string_view name) {
  if (Node* scope = resolved_scope()) scope->erase(std::string(name));
}

Node* Section::resolved_scope() {
  if (!resolver_->scopes_[0].node) return nullptr;  // documentation only
  // Navigate from the root each time: nodes move when siblings are added.
  Node* cur = &resolver_->resolved_;
  const std::string& scope_path = resolver_->scopes_[scope_].path;
  std::size_t start = 0;
  while (!scope_path.empty() && start <= scope_path.size()) {
    std::size_t dot = scope_path.find('.', start);
    std::string key = scope_path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    std::size_t bracket = key.find('[');
    if (bracket != std::string::npos) {
      std::size_t index = std::stoul(key.substr(bracket + 1));
      key = key.substr(0, bracket);
      Node* list = cur->find(key);
      if (!list) list = &cur->set(key, Location{}, Node::sequence(Location{}));
      while (list->items().size() <= index) list->push(Node::map(Location{}));
      cur = &list->items()[index];
    } else {
      Node* next = cur->find(key);
      if (!next) next = &cur->set(key, Location{}, Node::map(Location{}));
      cur = next;
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

const Node* Section::declare_list(std::string_view name, std::string_view type, const std::string& def,
                                  const std::string& range, std::string_view doc) {
  auto& s = resolver_->scopes_[scope_];
  s.declared.emplace_back(name);
  std::string p = path(name);
  resolver_->docs_.push_back(FieldDoc{doc_path(p), std::string(type), def, range, std::string(doc)});
  resolver_->comments_.emplace_back(doc_path(p), std::string(doc));
  if (!s.node || !s.node->is_map()) return nullptr;
  const Node* n = s.node->find(std::string(name));
  if (!n) return nullptr;
  if (!n->is_sequence()) {
    error(name, fmt::format("expected a list ({}), found {}", type, n->kind_name()));
    return nullptr;
  }
  return n;
}

std::vector<std::int64_t> Section::integers(std::string_view name, const std::vector<std::int64_t>& def,
                                            std::int64_t min, std::int64_t max, std::string_view doc) {
  std::string def_text = "[";
  for (std::size_t i = 0; i < def.size(); ++i) def_text += (i ? ", " : "") + std::to_string(def[i]);
  def_text += "]";
  const Node* n = declare_list(name, "integer list", def_text, fmt::format("each {} .. {}", min, max), doc);
  std::vector<std::int64_t> v = def;
  if (n) {
    v.clear();
    for (const auto& item : n->items()) {
      std::int64_t parsed = 0;
      if (!item.is_scalar() || !parse_int(item.text(), parsed) || parsed < min || parsed > max) {
        resolver_->add_diagnostic(Diagnostic{item.location(), path(name),
                                             fmt::format("expected integers in {} .. {}, found {}", min, max,
                                                         item.kind_name())});
        v = def;
        break;
      }
      v.push_back(parsed);
    }
  }
  Node out = Node::sequence(Location{});
  for (auto x : v) out.push(Node::scalar(std::to_string(x), Location{}));
  emit_node(name, std::move(out));
  return v;
}

std::vector<std::string> Section::texts(std::string_view name, const std::vector<std::string>& def,
                                        std::string_view doc) {
  std::string def_text = "[";
  for (std::size_t i = 0; i < def.size(); ++i) def_text += (i ? ", " : "") + def[i];
  def_text += "]";
  const Node* n = declare_list(name, "string list", def_text, "any names", doc);
  std::vector<std::string> v = def;
  if (n) {
    v.clear();
    for (const auto& item : n->items()) {
      if (!item.is_scalar()) {
        resolver_->add_diagnostic(
            Diagnostic{item.location(), path(name), fmt::format("expected a name, found {}", item.kind_name())});
        v = def;
        break;
      }
      v.push_back(item.text());
    }
  }
  Node out = Node::sequence(Location{});
  for (const auto& x : v) {
    Node item = Node::scalar(x, Location{});
    item.set_quoted(true);
    out.push(std::move(item));
  }
  emit_node(name, std::move(out));
  return v;
}

std::vector<Section> Section::sections(std::string_view name, std::string_view doc) {
  const Node* n = declare_list(name, "list", "[]", "list of mappings", doc);
  std::vector<Section> out;
  auto make = [&](const Node* item, std::size_t index, Location loc) {
    Resolver::Scope child;
    child.path = index == static_cast<std::size_t>(-1) ? path(name) + "[]" : fmt::format("{}[{}]", path(name), index);
    child.node = item;
    child.location = std::move(loc);
    resolver_->scopes_.push_back(std::move(child));
    out.push_back(Section(resolver_, resolver_->scopes_.size() - 1));
  };
  if (!resolver_->scopes_[0].node) {
    make(nullptr, static_cast<std::size_t>(-1), Location{});
    return out;
  }
  if (!n) {
    emit_node(name, Node::sequence(Location{}));
    return out;
  }
  for (std::size_t i = 0; i < n->items().size(); ++i) {
    const Node& item = n->items()[i];
    if (!item.is_map()) {
      resolver_->add_diagnostic(Diagnostic{item.location(), fmt::format("{}[{}]", path(name), i),
                                           fmt::format("expected a mapping, found {}", item.kind_name())});
      continue;
    }
    make(&item, i, item.location());
  }
  return out;
}

std::int64_t Section::integer(std::string_view name, std::int64_t def, std::int64_t min, std::int64_t max,
                              std::string_view doc) {
  const Node* n = declare(name, "integer", fmt::format("{}", def), fmt::format("{} .. {}", min, max), doc);
  std::int64_t v = def;
  if (n) {
    std::int64_t parsed = 0;
    if (!parse_int(n->text(), parsed)) {
      double as_real = 0;
      if (parse_real(n->text(), as_real))
        error(name, fmt::format("expected a whole number in {} .. {}, found '{}'", min, max, n->text()));
      else
        error(name, fmt::format("expected an integer in {} .. {}, found '{}'", min, max, n->text()));
    } else if (parsed < min || parsed > max) {
      error(name, fmt::format("expected an integer in {} .. {}, found {}", min, max, parsed));
    } else {
      v = parsed;
    }
  }
  emit(name, fmt::format("{}", v));
  return v;
}

double Section::real(std::string_view name, double def, double min, double max, std::string_view doc) {
  const Node* n = declare(name, "number", fmt::format("{}", def), fmt::format("{} .. {}", min, max), doc);
  double v = def;
  if (n) {
    double parsed = 0;
    if (!parse_real(n->text(), parsed))
      error(name, fmt::format("expected a number in {} .. {}, found '{}'", min, max, n->text()));
    else if (parsed < min || parsed > max)
      error(name, fmt::format("expected a number in {} .. {}, found {}", min, max, parsed));
    else
      v = parsed;
  }
  emit(name, fmt::format("{}", v));
  return v;
}

bool Section::boolean(std::string_view name, bool def, std::string_view doc) {
  const Node* n = declare(name, "boolean", def ? "true" : "false", "true, false", doc);
  bool v = def;
  if (n) {
    if (n->text() == "true")
      v = true;
    else if (n->text() == "false")
      v = false;
    else
      error(name, fmt::format("expected true or false, found '{}'", n->text()));
  }
  emit(name, v ? "true" : "false");
  return v;
}

std::string Section::choice(std::string_view name, std::string_view def,
                            std::initializer_list<std::string_view> options, std::string_view doc) {
  std::string list;
  std::vector<std::string> names;
  for (auto o : options) {
    list += (list.empty() ? "" : ", ") + std::string(o);
    names.emplace_back(o);
  }
  const Node* n = declare(name, "choice", std::string(def), "one of: " + list, doc);
  std::string v(def);
  if (n) {
    if (std::find(names.begin(), names.end(), n->text()) != names.end()) {
      v = n->text();
    } else {
      std::string hint = closest_match(n->text(), names);
      error(name, fmt::format("expected one of {}, found '{}'{}", list, n->text(),
                              hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint)));
    }
  }
  emit(name, v, true);
  return v;
}

std::string Section::text(std::string_view name, std::string_view def, std::string_view doc) {
  const Node* n = declare(name, "string", std::string(def), "any text", doc);
  std::string v = n ? n->text() : std::string(def);
  emit(name, v, true);
  return v;
}

double Section::quantity(std::string_view name, double def, double min, double max, units::Dimension dim,
                         std::string_view doc) {
  std::string range = fmt::format("{} .. {}", units::format(min, dim), units::format(max, dim));
  const Node* n = declare(name, units::to_string(dim), units::format(def, dim), range, doc);
  double v = def;
  if (n) {
    auto r = units::parse(n->text(), dim);
    if (!r.ok) {
      Location loc = n->location();
      // Point at the offending part of a plain scalar on one line.
      if (!n->quoted() && loc.line > 0) loc.column += static_cast<int>(r.column);
      resolver_->add_diagnostic(Diagnostic{loc, path(name), r.error});
    } else if (r.value < min || r.value > max) {
      error(name, fmt::format("expected a {} in {}, found {}", units::to_string(dim), range,
                              units::format(r.value, dim)));
    } else {
      v = r.value;
    }
  }
  emit(name, units::format(v, dim));
  return v;
}

units::Frequency Section::frequency(std::string_view name, units::Frequency def, units::Frequency min,
                                    units::Frequency max, std::string_view doc) {
  return {quantity(name, def.hz, min.hz, max.hz, units::Dimension::Frequency, doc)};
}

units::DataSize Section::size(std::string_view name, units::DataSize def, units::DataSize min, units::DataSize max,
                              std::string_view doc) {
  double v = quantity(name, static_cast<double>(def.bits), static_cast<double>(min.bits),
                      static_cast<double>(max.bits), units::Dimension::DataSize, doc);
  return units::DataSize{static_cast<std::uint64_t>(v)};
}

units::Bandwidth Section::bandwidth(std::string_view name, units::Bandwidth def, units::Bandwidth min,
                                    units::Bandwidth max, std::string_view doc) {
  return {quantity(name, def.bits_per_s, min.bits_per_s, max.bits_per_s, units::Dimension::Bandwidth, doc)};
}

units::Duration Section::duration(std::string_view name, units::Duration def, units::Duration min,
                                  units::Duration max, std::string_view doc) {
  return {quantity(name, def.seconds, min.seconds, max.seconds, units::Dimension::Duration, doc)};
}

Cycle Section::cycles(std::string_view name, Cycle def, Cycle min, Cycle max, std::string_view doc) {
  double v = quantity(name, static_cast<double>(def.count()), static_cast<double>(min.count()),
                      static_cast<double>(max.count()), units::Dimension::Cycles, doc);
  return Cycle(static_cast<std::uint64_t>(v));
}

units::ParamRate Section::param_rate(std::string_view name, units::ParamRate def, units::ParamRate min,
                                     units::ParamRate max, std::string_view doc) {
  return {quantity(name, def.per_s, min.per_s, max.per_s, units::Dimension::ParamRate, doc)};
}

units::Energy Section::energy(std::string_view name, units::Energy def, units::Energy min, units::Energy max,
                              std::string_view doc) {
  return {quantity(name, def.joules, min.joules, max.joules, units::Dimension::Energy, doc)};
}

units::Power Section::power(std::string_view name, units::Power def, units::Power min, units::Power max,
                            std::string_view doc) {
  return {quantity(name, def.watts, min.watts, max.watts, units::Dimension::Power, doc)};
}

Section Section::section(std::string_view name, std::string_view doc) {
  auto& s = resolver_->scopes_[scope_];
  s.declared.emplace_back(name);
  std::string p = path(name);
  resolver_->comments_.emplace_back(doc_path(p), std::string(doc));
  Resolver::Scope child;
  child.path = p;
  child.location = s.location;
  if (s.node && s.node->is_map()) {
    if (const Node::Entry* e = s.node->find_entry(std::string(name))) {
      child.location = e->value.is_null() ? e->key_location : e->value.location();
      if (e->value.is_map()) {
        child.node = &e->value;
      } else if (!e->value.is_null()) {
        resolver_->add_diagnostic(
            Diagnostic{e->value.location(), p, fmt::format("expected a mapping of settings, found {}",
                                                           e->value.kind_name())});
      }
    }
  }
  resolver_->scopes_.push_back(std::move(child));
  return Section(resolver_, resolver_->scopes_.size() - 1);
}

}  // namespace wafersim::sim::config

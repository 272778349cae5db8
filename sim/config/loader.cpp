#include "sim/config/loader.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <yaml-cpp/eventhandler.h>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "sim/config/input_file.h"
#include "sim/config/utf8.h"

namespace wafersim::sim::config {
namespace fs = std::filesystem;
namespace {

constexpr int kMaxDepth = 64;

// What aliases may add to a document: yaml-cpp shares an aliased node, so the cost of an alias
// shows only when the tree is walked. A node is visited through an alias when its position in
// the text was visited before.
struct Expansion {
  std::vector<bool> seen;  // by byte offset of the node's start
  std::uint64_t nodes = 0, bytes = 0;
  explicit Expansion(std::size_t text_size) : seen(text_size + 1, false) {}
  void visit(const YAML::Node& y, const Location& loc) {
    const int pos = y.Mark().pos;
    if (pos < 0 || static_cast<std::size_t>(pos) >= seen.size()) return;
    if (!seen[static_cast<std::size_t>(pos)]) {
      seen[static_cast<std::size_t>(pos)] = true;
      return;
    }
    ++nodes;
    if (y.IsScalar()) bytes += y.Scalar().size();
    if (nodes > kMaxAliasNodes || bytes > kMaxAliasBytes)
      throw ConfigError(Diagnostic{
          loc,
          {},
          fmt::format("aliases expand the document beyond the limit of {} nodes and {} MiB of text they may add "
                      "(nested anchors and aliases)",
                      kMaxAliasNodes, kMaxAliasBytes >> 20)});
  }
};

Location at(const std::string& file, const YAML::Mark& m, const Location& fallback) {
  if (m.is_null() || m.line < 0) return fallback;
  return Location{file, m.line + 1, m.column + 1};
}

Node convert(const YAML::Node& y, const std::string& file, const Location& fallback, int depth, Expansion& expansion) {
  Location loc = at(file, y.Mark(), fallback);
  expansion.visit(y, loc);
  if (depth > kMaxDepth)
    throw ConfigError(Diagnostic{loc, {}, fmt::format("document nested deeper than {} levels", kMaxDepth)});
  switch (y.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null: {
      Node n;
      n.set_location(loc);
      return n;
    }
    case YAML::NodeType::Scalar: {
      Node n = Node::scalar(y.Scalar(), loc);
      n.set_quoted(y.Tag() == "!");
      return n;
    }
    case YAML::NodeType::Sequence: {
      Node n = Node::sequence(loc);
      for (const auto& item : y) n.push(convert(item, file, loc, depth + 1, expansion));
      return n;
    }
    case YAML::NodeType::Map: {
      Node n = Node::map(loc);
      for (const auto& kv : y) {
        Location kloc = at(file, kv.first.Mark(), loc);
        if (!kv.first.IsScalar())
          throw ConfigError(Diagnostic{kloc, {}, "a mapping key must be a plain name, found a complex key"});
        const std::string key = kv.first.Scalar();
        if (const Node::Entry* prev = n.find_entry(key))
          throw ConfigError(Diagnostic{kloc, key,
                                       fmt::format("duplicate key '{}' (first given at line {}, column {})", key,
                                                   prev->key_location.line, prev->key_location.column)});
        Node value = convert(kv.second, file, kloc, depth + 1, expansion);
        if (value.is_null()) value.set_location(kloc);
        n.entries().push_back(Node::Entry{key, kloc, std::move(value)});
      }
      return n;
    }
  }
  return Node();
}

std::string normalize(const std::string& p) { return fs::path(p).lexically_normal().generic_string(); }

}  // namespace

Loader::Loader(const BuiltinFiles* builtins, std::string builtin_dir)
    : builtins_(builtins), builtin_dir_(std::move(builtin_dir)) {}

namespace {

// Notes where each document starts; nothing else.
class DocumentMarks : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

Node Loader::parse(std::string_view text, const std::string& file_name) {
  if (text.size() > kMaxYamlBytes)
    throw ConfigError(Diagnostic{Location{file_name, 0, 0},
                                 {},
                                 fmt::format("the text is {} bytes, larger than the limit of {} MiB for a YAML file",
                                             text.size(), kMaxYamlBytes >> 20)});
  check_utf8(text, file_name);
  // YAML::LoadAll never returns on some malformed input (e.g. ","), so the first document
  // is read with Load and at most one more document start is looked for.
  std::vector<YAML::Node> docs;
  DocumentMarks marks;
  try {
    docs.push_back(YAML::Load(std::string(text)));
    if (!docs[0].IsNull()) {
      std::istringstream in{std::string(text)};
      YAML::Parser parser(in);
      if (parser.HandleNextDocument(marks)) parser.HandleNextDocument(marks);
    }
  } catch (const YAML::Exception& e) {
    throw ConfigError(Diagnostic{
        Location{file_name, e.mark.line + 1, e.mark.column + 1}, {}, fmt::format("malformed YAML: {}", e.msg)});
  }
  if (docs[0].IsNull()) {
    bool blank = true;
    std::istringstream lines{std::string(text)};
    for (std::string line; blank && std::getline(lines, line);) {
      std::size_t i = line.find_first_not_of(" \t\r");
      blank = i == std::string::npos || line[i] == '#';
    }
    throw ConfigError(Diagnostic{
        Location{file_name, 1, 1},
        {},
        blank ? "empty file: expected a mapping of settings" : "expected a mapping of settings, found no YAML value"});
  }
  if (marks.starts.size() > 1)
    throw ConfigError(Diagnostic{at(file_name, marks.starts[1], Location{file_name, 1, 1}),
                                 {},
                                 "several YAML documents in one file; expected exactly one"});
  Node root;
  try {
    Expansion expansion(text.size());
    root = convert(docs[0], file_name, Location{file_name, 1, 1}, 0, expansion);
  } catch (const YAML::Exception& e) {
    throw ConfigError(Diagnostic{
        Location{file_name, e.mark.line + 1, e.mark.column + 1}, {}, fmt::format("malformed YAML: {}", e.msg)});
  }
  if (!root.is_map())
    throw ConfigError(
        Diagnostic{root.location(),
                   {},
                   fmt::format("expected a mapping of settings at the top level, found {}", root.kind_name())});
  return root;
}

bool Loader::find(const std::string& path, Text& out) const {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    out.text = read_input_file(path, "the YAML file", kMaxYamlBytes);
    out.name = path;
    out.key = fs::weakly_canonical(path, ec).string();
    out.builtin = false;
    return true;
  }
  if (!builtins_) return false;
  std::vector<std::string> candidates{normalize(path)};
  if (!builtin_dir_.empty()) {
    candidates.push_back(normalize(builtin_dir_ + "/" + path));
    candidates.push_back(normalize(builtin_dir_ + "/" + path + ".yaml"));
  }
  for (const auto& c : candidates)
    for (const auto& [name, text] : *builtins_)
      if (name == c) {
        out.name = std::string(name);
        out.key = "builtin:" + std::string(name);
        out.text = std::string(text);
        out.builtin = true;
        return true;
      }
  return false;
}

bool Loader::exists(const std::string& path) const {
  Text t;
  return find(path, t);
}

Node Loader::load(const std::string& path) const {
  std::vector<std::string> chain;
  return load_chain(path, Location{}, chain);
}

Node Loader::load_chain(const std::string& path, const Location& from, std::vector<std::string>& chain) const {
  Text t;
  if (!find(path, t)) {
    std::error_code ec;
    std::string why = fs::exists(path, ec) ? unreadable_reason(path) : "no such file or built-in preset";
    if (from.line > 0) throw ConfigError(Diagnostic{from, "base", fmt::format("cannot open '{}': {}", path, why)});
    throw ConfigError(Diagnostic{Location{path, 0, 0}, {}, fmt::format("cannot open '{}': {}", path, why)});
  }
  for (const auto& k : chain)
    if (k == t.key) {
      std::string cycle;
      for (const auto& c : chain) cycle += c.substr(c.rfind('/') + 1) + " -> ";
      cycle += t.name.substr(t.name.rfind('/') + 1);
      throw ConfigError(Diagnostic{from, "base", fmt::format("'base:' chain forms a cycle: {}", cycle)});
    }
  if (chain.size() > 32) throw ConfigError(Diagnostic{from, "base", "'base:' chain longer than 32 files"});
  chain.push_back(t.key);

  Node merged = resolve_base(parse(t.text, t.name), t.name, chain);
  chain.pop_back();
  return merged;
}

Node Loader::load_text(std::string_view text, const std::string& name) const {
  std::vector<std::string> chain{"text:" + name};
  return resolve_base(parse(text, name), name, chain);
}

Node Loader::resolve_base(Node root, const std::string& name, std::vector<std::string>& chain) const {
  const Node::Entry* base = root.find_entry("base");
  if (!base) return root;
  if (!base->value.is_scalar() || base->value.text().empty())
    throw ConfigError(
        Diagnostic{base->value.location(), "base",
                   fmt::format("expected the path of another YAML file, found {}", base->value.kind_name())});
  // Relative to the including file first; otherwise a preset name or a path as written.
  std::string base_path = (fs::path(name).parent_path() / base->value.text()).lexically_normal().generic_string();
  Text probe;
  if (!find(base_path, probe) && find(base->value.text(), probe)) base_path = base->value.text();
  Node merged = load_chain(base_path, base->value.location(), chain);
  root.erase("base");
  merged.merge(root);
  return merged;
}

void Loader::apply_overrides(Node& root, const std::vector<std::string>& assignments) {
  int index = 0;
  for (const auto& a : assignments) {
    ++index;
    const std::string file = "<command line>";
    auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError(
          Diagnostic{Location{file, index, 1}, {}, fmt::format("--set expects key.path=value, found '{}'", a)});
    std::string path = a.substr(0, eq);
    std::string value_text = a.substr(eq + 1);
    Location value_loc{file, index, static_cast<int>(eq) + 2};
    Node value;
    check_utf8(a, file);
    try {
      YAML::Node y = YAML::Load(value_text);
      Expansion expansion(value_text.size());
      value = convert(y, file, value_loc, 0, expansion);
    } catch (const YAML::Exception& e) {
      throw ConfigError(Diagnostic{value_loc, path, fmt::format("malformed value '{}': {}", value_text, e.msg)});
    }
    // Every location inside an override points at the value's start on the command line.
    std::function<void(Node&)> relocate = [&](Node& n) {
      n.set_location(value_loc);
      for (auto& e : n.entries()) {
        e.key_location = value_loc;
        relocate(e.value);
      }
    };
    relocate(value);
    if (value.is_null()) value = Node::scalar("", value_loc);

    Node* cur = &root;
    std::size_t start = 0;
    while (true) {
      std::size_t dot = path.find('.', start);
      std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      Location key_loc{file, index, static_cast<int>(start) + 1};
      if (key.empty()) throw ConfigError(Diagnostic{key_loc, path, "empty key in --set path"});
      if (dot == std::string::npos) {
        Node* existing = cur->find(key);
        if (existing && existing->is_map() && value.is_map())
          existing->merge(value);
        else
          cur->set(key, key_loc, value);
        break;
      }
      Node* next = cur->find(key);
      if (!next) {
        next = &cur->set(key, key_loc, Node::map(key_loc));
      } else if (!next->is_map()) {
        throw ConfigError(
            Diagnostic{key_loc, path.substr(0, dot),
                       fmt::format("--set path goes through {}, which is not a mapping", next->kind_name())});
      }
      cur = next;
      start = dot + 1;
    }
  }
}

}  // namespace wafersim::sim::config

#pragma once
// The raw configuration layer: a YAML document read with yaml-cpp into a tree that
// remembers, for every key and value, the file, line and column it came from.

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace wafersim::sim::config {

// Where a key or value was written; line and column are 1-based.
struct Location {
  std::string file;
  int line = 0;
  int column = 0;
  [[nodiscard]] std::string str() const;  // "file:line:col" (or "file" when unknown)
};

// One node of a located YAML document: null, scalar, map (ordered) or sequence.
class Node {
 public:
  enum class Kind { Null, Scalar, Map, Sequence };
  struct Entry;

  Node() = default;
  static Node scalar(std::string text, Location loc);
  static Node map(Location loc);
  static Node sequence(Location loc);

  [[nodiscard]] Kind kind() const { return kind_; }
  [[nodiscard]] bool is_null() const { return kind_ == Kind::Null; }
  [[nodiscard]] bool is_scalar() const { return kind_ == Kind::Scalar; }
  [[nodiscard]] bool is_map() const { return kind_ == Kind::Map; }
  [[nodiscard]] bool is_sequence() const { return kind_ == Kind::Sequence; }
  [[nodiscard]] const std::string& text() const { return text_; }
  [[nodiscard]] const Location& location() const { return location_; }
  void set_location(Location loc) { location_ = std::move(loc); }
  // True when the scalar was quoted in the source (so "yes" stays a string).
  [[nodiscard]] bool quoted() const { return quoted_; }
  void set_quoted(bool q) { quoted_ = q; }

  // Map access (in source order).
  [[nodiscard]] const std::vector<Entry>& entries() const { return entries_; }
  std::vector<Entry>& entries() { return entries_; }
  [[nodiscard]] const Node* find(const std::string& key) const;
  Node* find(const std::string& key);
  [[nodiscard]] const Entry* find_entry(const std::string& key) const;
  Node& set(const std::string& key, Location key_loc, Node value);
  bool erase(const std::string& key);

  // Sequence access.
  [[nodiscard]] const std::vector<Node>& items() const { return items_; }
  std::vector<Node>& items() { return items_; }
  void push(Node n) { items_.push_back(std::move(n)); }

  // Overlays `over` onto this node: maps merge key by key, anything else replaces.
  void merge(const Node& over);

  [[nodiscard]] std::string kind_name() const;

 private:
  Kind kind_ = Kind::Null;
  std::string text_;
  bool quoted_ = false;
  Location location_;
  std::vector<Entry> entries_;
  std::vector<Node> items_;
};

struct Node::Entry {
  std::string key;
  Location key_location;
  Node value;
};

}  // namespace wafersim::sim::config

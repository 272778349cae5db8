#include "sim/config/node.h"

#include <fmt/format.h>

namespace wafersim::sim::config {

std::string Location::str() const {
  if (line <= 0) return file;
  return fmt::format("{}:{}:{}", file, line, column);
}

Node Node::scalar(std::string text, Location loc) {
  Node n;
  n.kind_ = Kind::Scalar;
  n.text_ = std::move(text);
  n.location_ = std::move(loc);
  return n;
}

Node Node::map(Location loc) {
  Node n;
  n.kind_ = Kind::Map;
  n.location_ = std::move(loc);
  return n;
}

Node Node::sequence(Location loc) {
  Node n;
  n.kind_ = Kind::Sequence;
  n.location_ = std::move(loc);
  return n;
}

const Node::Entry* Node::find_entry(const std::string& key) const {
  for (const auto& e : entries_)
    if (e.key == key) return &e;
  return nullptr;
}

const Node* Node::find(const std::string& key) const {
  const Entry* e = find_entry(key);
  return e ? &e->value : nullptr;
}

Node* Node::find(const std::string& key) {
  for (auto& e : entries_)
    if (e.key == key) return &e.value;
  return nullptr;
}

Node& Node::set(const std::string& key, Location key_loc, Node value) {
  kind_ = Kind::Map;
  for (auto& e : entries_)
    if (e.key == key) {
      e.key_location = std::move(key_loc);
      e.value = std::move(value);
      return e.value;
    }
  entries_.push_back(Entry{key, std::move(key_loc), std::move(value)});
  return entries_.back().value;
}

bool Node::erase(const std::string& key) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->key == key) {
      entries_.erase(it);
      return true;
    }
  return false;
}

void Node::merge(const Node& over) {
  if (is_map() && over.is_map()) {
    for (const auto& e : over.entries_) {
      Node* mine = find(e.key);
      if (mine && mine->is_map() && e.value.is_map()) {
        mine->merge(e.value);
        for (auto& m : entries_)
          if (m.key == e.key) m.key_location = e.key_location;
      } else {
        set(e.key, e.key_location, e.value);
      }
    }
    return;
  }
  *this = over;
}

std::string Node::kind_name() const {
  switch (kind_) {
    case Kind::Null: return "nothing";
    case Kind::Scalar: return fmt::format("'{}'", text_);
    case Kind::Map: return "a mapping";
    case Kind::Sequence: return "a list";
  }
  return "?";
}

}  // namespace wafersim::sim::config

#pragma once
// A small reader of VCD files (IEEE 1364 value change dumps) for tests: the header's scopes
// and variables, and every value change. Throws std::runtime_error on malformed input.

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace wafersim::test {

struct VcdVariable {
  std::string name;  // scopes joined with '.', e.g. SystemC.wafer0.r5_2.east_sent
  std::string id;
  int bits = 1;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> changes;  // (time, value), time ascending
};

struct Vcd {
  std::string timescale;
  std::vector<VcdVariable> variables;
  std::uint64_t last_time = 0;
  [[nodiscard]] const VcdVariable* find(const std::string& suffix) const {
    for (const auto& v : variables)
      if (v.name.size() >= suffix.size() && v.name.compare(v.name.size() - suffix.size(), suffix.size(), suffix) == 0)
        return &v;
    return nullptr;
  }
};

inline Vcd read_vcd(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  Vcd vcd;
  std::vector<std::string> scope;
  std::map<std::string, std::size_t> by_id;
  std::string tok;
  auto until_end = [&]() {
    std::string all, t;
    while (in >> t && t != "$end") all += (all.empty() ? "" : " ") + t;
    if (t != "$end") throw std::runtime_error("VCD: unterminated section");
    return all;
  };
  bool defs = true;
  std::uint64_t now = 0;
  bool seen_time = false;
  while (in >> tok) {
    if (defs) {
      if (tok == "$timescale") {
        vcd.timescale = until_end();
      } else if (tok == "$scope") {
        std::string kind, name;
        in >> kind >> name;
        scope.push_back(name);
        until_end();
      } else if (tok == "$upscope") {
        if (scope.empty()) throw std::runtime_error("VCD: $upscope without $scope");
        scope.pop_back();
        until_end();
      } else if (tok == "$var") {
        VcdVariable v;
        std::string type, name;
        in >> type >> v.bits >> v.id >> name;
        until_end();  // optional range
        std::string full;
        for (const auto& s : scope) full += s + ".";
        v.name = full + name;
        if (by_id.count(v.id)) throw std::runtime_error("VCD: duplicate id " + v.id);
        by_id[v.id] = vcd.variables.size();
        vcd.variables.push_back(v);
      } else if (tok == "$enddefinitions") {
        until_end();
        if (!scope.empty()) throw std::runtime_error("VCD: unclosed $scope");
        defs = false;
      } else if (tok[0] == '$') {
        until_end();
      } else {
        throw std::runtime_error("VCD: unexpected '" + tok + "' in the header");
      }
      continue;
    }
    if (tok[0] == '#') {
      const std::uint64_t t = std::stoull(tok.substr(1));
      if (seen_time && t < now) throw std::runtime_error("VCD: time goes backwards at " + tok);
      now = t;
      seen_time = true;
      vcd.last_time = t;
    } else if (tok[0] == '$') {
      if (tok != "$dumpvars" && tok != "$end" && tok != "$dumpall" && tok != "$dumpon" && tok != "$dumpoff" &&
          tok != "$comment")
        throw std::runtime_error("VCD: unexpected " + tok);
      if (tok == "$comment") until_end();
    } else {
      std::string bits, id;
      if (tok[0] == 'b' || tok[0] == 'B') {
        bits = tok.substr(1);
        in >> id;
      } else if (tok[0] == '0' || tok[0] == '1') {
        bits = tok.substr(0, 1);
        id = tok.substr(1);
      } else {
        throw std::runtime_error("VCD: unexpected value '" + tok + "'");
      }
      auto it = by_id.find(id);
      if (it == by_id.end()) throw std::runtime_error("VCD: value for unknown id " + id);
      std::uint64_t value = 0;
      for (char c : bits) {
        if (c != '0' && c != '1') throw std::runtime_error("VCD: value " + bits + " is not binary");
        value = value * 2 + static_cast<std::uint64_t>(c - '0');
      }
      vcd.variables[it->second].changes.emplace_back(now, value);
    }
  }
  if (defs) throw std::runtime_error("VCD: no $enddefinitions");
  return vcd;
}

}  // namespace wafersim::test

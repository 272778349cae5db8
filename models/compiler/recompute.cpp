#include <algorithm>
#include <map>
#include <set>

#include "models/compiler/schedule.h"

namespace wafersim::models::compiler {

namespace {

std::string block_of(const std::string& layer) {
  const auto dot = layer.find('.');
  return dot == std::string::npos ? std::string() : layer.substr(0, dot);
}

void remap(std::vector<std::uint32_t>& ids, const std::map<std::uint32_t, std::uint32_t>& to) {
  for (auto& t : ids)
    if (const auto it = to.find(t); it != to.end()) t = it->second;
}

void remap(std::vector<int>& ids, const std::map<std::uint32_t, std::uint32_t>& to) {
  for (auto& t : ids)
    if (t >= 0)
      if (const auto it = to.find(static_cast<std::uint32_t>(t)); it != to.end()) t = static_cast<int>(it->second);
}

void remap(Step& st, const std::map<std::uint32_t, std::uint32_t>& to) {
  remap(st.reads, to);
  remap(st.writes, to);
  remap(st.in, to);
  if (st.out >= 0)
    if (const auto it = to.find(static_cast<std::uint32_t>(st.out)); it != to.end())
      st.out = static_cast<int>(it->second);
}

}  // namespace

Schedule recompute_blocks(Schedule s, const ModelSpec& m) {
  const std::size_t n_forward = m.layers.size();
  if (s.steps.size() <= n_forward) return s;
  // The block that writes each tensor in the forward pass, and the blocks whose backward
  // steps use it.
  std::map<std::uint32_t, std::string> writer;
  for (std::size_t i = 0; i < n_forward; ++i)
    if (s.steps[i].out >= 0) writer[static_cast<std::uint32_t>(s.steps[i].out)] = block_of(s.steps[i].layer);
  std::map<std::uint32_t, std::set<std::string>> users;
  for (std::size_t i = n_forward; i < s.steps.size(); ++i) {
    const Step& st = s.steps[i];
    const std::string b = block_of(st.layer);
    for (auto t : st.reads) users[t].insert(b);
    for (int t : st.in)
      if (t >= 0) users[static_cast<std::uint32_t>(t)].insert(b);
    if (st.out >= 0) users[static_cast<std::uint32_t>(st.out)].insert(b);
  }
  std::set<std::uint32_t> kept(s.kept.begin(), s.kept.end());
  std::map<std::string, std::map<std::uint32_t, std::uint32_t>> copies;  // per block: tensor -> its copy
  for (const auto& [t, b] : writer) {
    const auto u = users.find(t);
    if (b.empty() || kept.count(t) || u == users.end() || u->second != std::set<std::string>{b}) continue;
    Tensor c = s.tensors[t];
    c.name += "@recomputed";
    copies[b][t] = static_cast<std::uint32_t>(s.tensors.size());
    s.tensors.push_back(std::move(c));
  }
  if (copies.empty()) return s;

  std::vector<Step> steps(s.steps.begin(), s.steps.begin() + static_cast<std::ptrdiff_t>(n_forward));
  std::set<std::string> done;
  for (std::size_t i = n_forward; i < s.steps.size(); ++i) {
    Step st = s.steps[i];
    const std::string b = block_of(st.layer);
    const auto c = copies.find(b);
    if (c != copies.end()) {
      if (done.insert(b).second)
        for (std::size_t f = 0; f < n_forward; ++f) {
          const Step& fw = s.steps[f];
          if (block_of(fw.layer) != b || fw.out < 0 || !c->second.count(static_cast<std::uint32_t>(fw.out))) continue;
          Step r = fw;
          r.recompute = true;
          remap(r, c->second);
          steps.push_back(std::move(r));
        }
      remap(st, c->second);
    }
    steps.push_back(std::move(st));
  }
  s.steps = std::move(steps);
  return s;
}

std::uint64_t activation_peak(const Schedule& s) {
  const auto [first, last] = tensor_lifetimes(s);
  std::vector<std::int64_t> delta(s.steps.size() + 2, 0);
  for (std::size_t t = 0; t < s.tensors.size(); ++t) {
    if (first[t] < 0) continue;
    const auto bytes = static_cast<std::int64_t>(std::max<std::uint64_t>(8, (s.tensors[t].bytes + 7ULL) / 8 * 8));
    delta[static_cast<std::size_t>(first[t])] += bytes;
    delta[static_cast<std::size_t>(last[t]) + 1] -= bytes;
  }
  std::int64_t live = 0, peak = 0;
  for (const auto d : delta) peak = std::max(peak, live += d);
  return static_cast<std::uint64_t>(peak);
}

}  // namespace wafersim::models::compiler

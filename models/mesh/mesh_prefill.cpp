#include "models/mesh/mesh_prefill.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace wafersim::models::mesh {

const char* to_string(PrefillPer p) {
  switch (p) {
    case PrefillPer::Layer:
      return "layer";
    case PrefillPer::Wafer:
      return "wafer";
    case PrefillPer::Between:
      return "between layers";
  }
  return "?";
}

std::vector<GroupSample> all_groups(std::uint64_t tokens, std::uint32_t group, std::uint64_t base) {
  if (tokens == 0 || group == 0) throw std::logic_error("all_groups: a prompt and a group");
  std::vector<GroupSample> v;
  for (std::uint64_t lo = 0; lo < tokens; lo += group)
    v.push_back({base + lo, static_cast<std::uint32_t>(std::min<std::uint64_t>(group, tokens - lo)), 1});
  return v;
}

std::vector<GroupSample> sample_groups(std::uint64_t tokens, std::uint32_t group, std::uint32_t columns,
                                       std::uint64_t base) {
  if (columns == 0) throw std::logic_error("sample_groups: a region");
  const std::vector<GroupSample> all = all_groups(tokens, group, base);
  auto depth = [&](const GroupSample& g) { return (g.first + g.tokens - 1) / columns; };
  std::vector<GroupSample> v;
  for (std::size_t lo = 0; lo < all.size();) {
    std::size_t hi = lo;  // the run [lo, hi] of one depth
    while (hi + 1 < all.size() && depth(all[hi + 1]) == depth(all[lo])) ++hi;
    if (hi == lo) {
      v.push_back(all[lo]);
    } else {
      const std::uint64_t first = (hi - lo + 2) / 2;  // lo .. lo + first - 1
      v.push_back({all[lo].first, all[lo].tokens, first});
      v.push_back({all[hi].first, all[hi].tokens, hi - lo + 1 - first});
    }
    lo = hi + 1;
  }
  return v;
}

MeshPrefill::MeshPrefill(const compiler::Target& target, std::shared_ptr<const MeshLayout> layout,
                         std::vector<std::uint64_t> prompt, std::uint32_t simulated, std::uint32_t gemm_steps,
                         bool products_only, bool sampled, std::uint32_t group, std::uint64_t chunk)
    : target_(target),
      layout_(std::move(layout)),
      prompt_(std::move(prompt)),
      gemm_steps_(gemm_steps),
      products_only_(products_only),
      sampled_(sampled) {
  const MeshLayout& l = *layout_;
  const std::uint32_t N = l.gemm_positions();
  if (N == 0) throw std::logic_error("MeshPrefill: MeshGEMM takes a region at most twice as long as wide");
  if (gemm_steps == 0 || gemm_steps > N) throw std::logic_error("MeshPrefill: 1 to N shift steps");
  if (prompt_.empty() || prompt_.size() >= l.shape().capacity)
    throw std::logic_error("MeshPrefill: a prompt of 1 to capacity - 1 tokens");
  if (simulated > l.layers()) throw std::logic_error("MeshPrefill: more layers than the layout holds");
  for (std::uint64_t t : prompt_)
    if (t >= l.shape().vocabulary) throw std::logic_error("MeshPrefill: a token beyond the vocabulary");
  if (group == 0) throw std::logic_error("MeshPrefill: groups of at least one token");
  const std::uint64_t P = prompt_.size();
  chunk_ = chunk == 0 || chunk > P ? P : chunk;
  // Every chunk's group buffers fit where the first full chunk's do at the prompt's end: its
  // blocks are the largest and the cache the deepest.
  group_ = prefill_group(l, PromptChunk{P - chunk_, chunk_}, target_.sram_bytes(), group);
  for (std::uint64_t base = 0; base < P; base += chunk_)
    add_chunk(PromptChunk{base, std::min(chunk_, P - base)}, simulated, sampled);
}

void MeshPrefill::add_chunk(PromptChunk c, std::uint32_t simulated, bool sampled) {
  const MeshLayout& l = *layout_;
  const std::uint64_t P = prompt_.size();
  const std::uint32_t C = l.region().columns;
  const std::vector<GroupSample> groups =
      sampled ? sample_groups(c.tokens, group_, C, c.base) : all_groups(c.tokens, group_, c.base);
  const std::size_t from = steps_.size();
  using K = PrefillStepId::Kind;
  // Over each group: its embedding (on the first wafer), then the first layer's norm and the
  // move of its result into q/k/v's block.
  std::vector<PrefillStepId> first;
  if (l.embedding()) first.push_back({K::Embed, Gemv::Qkv, 0});
  if (simulated) first.insert(first.end(), {{K::Ln1, Gemv::Qkv, 0}, {K::Block, Gemv::Qkv, 0}});
  add_groups(groups, first, PrefillPer::Wafer);
  for (std::uint32_t i = 0; i < simulated; ++i) {
    add_gemm(Gemv::Qkv, i, c);
    add_groups(groups, {{K::QkvUnblock, Gemv::Qkv, i}, {K::Attn, Gemv::Qkv, i}, {K::OBlock, Gemv::O, i}});
    add_gemm(Gemv::O, i, c);
    add_blocks({K::NormBlocks, Gemv::O, i}, c);
    add_gemm(Gemv::GateUp, i, c);
    add_blocks({K::SwigluBlocks, Gemv::GateUp, i}, c);
    add_gemm(Gemv::Down, i, c);
    // After the last simulated layer, the last prompt token's output on every PE (what the
    // head, or the next wafer, takes: once a wafer); then, while a layer follows on this
    // wafer, the layer's output straight into its first norm.
    if (i + 1 == simulated && c.end() == P) {
      PrefillStepId out{K::Output, Gemv::Down, i, P - 1};
      out.per = PrefillPer::Wafer;
      add_blocks(out, c);
    }
    if (i + 1 < l.layers()) {
      PrefillStepId norm{K::NormBlocks, Gemv::Down, i};
      norm.per = PrefillPer::Between;
      add_blocks(norm, c);
    }
  }
  for (std::size_t i = from; i < steps_.size(); ++i) {  // the pass's steps
    steps_[i].base = c.base;
    steps_[i].chunk = c.tokens;
  }
}

void MeshPrefill::add_groups(const std::vector<GroupSample>& groups, const std::vector<PrefillStepId>& per_group,
                             PrefillPer per) {
  if (products_only_) return;
  for (const GroupSample& g : groups)
    for (PrefillStepId s : per_group) {
      s.token = g.first;
      s.group = g.tokens;
      s.count = g.count;
      s.per = per;
      steps_.push_back(s);
    }
}

void MeshPrefill::add_blocks(PrefillStepId s, PromptChunk c) {
  if (products_only_ || (sampled_ && repeats(s, c))) return;
  steps_.push_back(s);
}

bool MeshPrefill::repeats(const PrefillStepId& s, PromptChunk c) {
  const std::uint32_t N = layout_->gemm_positions();
  const auto block = [&](std::uint64_t tokens) { return (tokens + N - 1) / N; };
  // The earlier passes' steps are marked with their pass (add_chunk), this pass's not yet.
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const PrefillStepId& e = steps_[i];
    if (e.kind == s.kind && e.g == s.g && e.layer == s.layer && e.steps == s.steps && e.per == s.per && e.chunk &&
        block(e.chunk) == block(c.tokens)) {
      PrefillStepId id = s;
      id.base = c.base;
      id.chunk = c.tokens;
      repeated_.push_back(RepeatedStep{id, i, steps_.size()});
      return true;
    }
  }
  return false;
}

void MeshPrefill::add_gemm(Gemv g, std::uint32_t layer, PromptChunk c) {
  const bool derived = gemm_steps_ < layout_->gemm_positions();
  PrefillStepId s{PrefillStepId::Kind::Gemm, g, layer, 0, gemm_steps_};
  if (derived && repeats(s, c)) return;
  s.steps = 1;
  if (derived) steps_.push_back(s);
  s.steps = gemm_steps_;
  steps_.push_back(s);
}

MeshStep MeshPrefill::repeated_step(std::size_t k) const { return step_of(repeated_.at(k).id, false); }

MeshStep MeshPrefill::step(std::size_t i, bool code) const { return step_of(steps_.at(i), code); }

MeshStep MeshPrefill::step_of(const PrefillStepId& s, bool code) const {
  const MeshLayout& l = *layout_;
  const PromptChunk c{s.base, s.chunk};
  const std::uint64_t n = s.chunk;
  switch (s.kind) {
    case PrefillStepId::Kind::Embed:
      return embedding_group_step(l, target_, prompt_, c, group_, s.token, s.group, code);
    case PrefillStepId::Kind::Ln1:
      return rmsnorm_group_step(l, target_, c, group_, s.token, s.group, code);
    case PrefillStepId::Kind::Block:
      return block_group_step(l, target_, Gemv::Qkv, 0, c, group_, s.token, s.group, code);
    case PrefillStepId::Kind::QkvUnblock:
      return qkv_unblock_group_step(l, target_, s.layer, c, group_, s.token, s.group, code);
    case PrefillStepId::Kind::Attn:
      return attention_group_step(l, target_, s.layer, c, group_, s.token, s.group, code);
    case PrefillStepId::Kind::OBlock:
      return block_group_step(l, target_, Gemv::O, s.layer, c, group_, s.token, s.group, code);
    case PrefillStepId::Kind::Gemm:
      return gemm_step(l, target_, s.g, s.layer, n, s.steps, code);
    case PrefillStepId::Kind::SwigluBlocks:
      return swiglu_blocks_step(l, target_, s.layer, n, code);
    case PrefillStepId::Kind::Output: {
      MeshStep out = unblock_step(l, target_, s.g, s.layer, n, s.token - s.base, code);
      out.name = fmt::format("prefill.h{}.output", s.layer);
      out.kernel = "output";
      return out;
    }
    case PrefillStepId::Kind::NormBlocks:
      return norm_blocks_step(l, target_, s.g, s.layer, n, code);
  }
  throw std::logic_error("MeshPrefill::step: an unknown step");
}

}  // namespace wafersim::models::mesh

// Chunk sequences in one task: docs/compiler.md, "Chunk loops".

#include "models/compiler/chunk_loop.h"

#include <algorithm>
#include <map>

#include "models/compiler/program_builder.h"

namespace wafersim::models::compiler {

std::vector<int> buffer_waits(const std::vector<int>& async_reader, const std::vector<bool>& writes) {
  std::vector<int> waits(async_reader.size(), -1);
  int pending[2] = {-1, -1};  // per buffer: the color class of a reader not yet known finished
  for (std::size_t j = 0; j < async_reader.size(); ++j) {
    int& mine = pending[j % 2];
    if (writes[j] && mine >= 0) {
      waits[j] = mine;
      for (int& p : pending)
        if (p == waits[j]) p = -1;
    }
    if (async_reader[j] >= 0) {
      for (int& p : pending)
        if (p == async_reader[j]) p = -1;
      mine = async_reader[j];
    }
  }
  return waits;
}

std::uint32_t chunk_table_bytes(std::uint32_t count) { return count > kStraightChunks ? (2 * count + 7) / 8 * 8 : 0; }

void emit_chunks(ProgramBuilder& b, std::uint32_t count,
                 const std::function<std::vector<std::int64_t>(std::uint32_t)>& key,
                 const std::function<void(std::uint32_t)>& body, std::uint32_t table) {
  using hw::isa::Cond;
  using hw::isa::Op;
  constexpr unsigned kPairs = 8, kVariant = 10, kTable = 11;
  std::vector<std::vector<std::int64_t>> keys(count);
  for (std::uint32_t j = 0; j < count; ++j) keys[j] = key(j);
  if (count <= kStraightChunks) {
    std::uint32_t j = 0;
    while (j < count) {
      std::uint32_t end = j + 1;
      while (end < count && keys[end] == keys[j]) ++end;
      const std::uint32_t n = end - j;
      if (n < 4) {
        for (; j < end; ++j) body(j);
        continue;
      }
      b.mov(kPairs, n / 2);
      const unsigned loop = b.label();
      b.bind(loop);
      body(j);
      body(j + 1);
      b.alu(Op::Sub, kPairs, kPairs, 1);
      b.branch(Cond::Ne, kPairs, 0, loop);
      if (n % 2) body(end - 1);
      j = end;
    }
    return;
  }
  // Variants in order of first appearance; each chunk's entry; per parity, the variants that
  // occur (with a chunk of theirs to emit the body from), most frequent first.
  std::map<std::vector<std::int64_t>, std::uint32_t> index;
  std::vector<std::uint32_t> variant(count);
  for (std::uint32_t j = 0; j < count; ++j) variant[j] = index.emplace(keys[j], index.size()).first->second;
  const std::uint32_t looped = count / 2 * 2;
  std::vector<std::uint8_t> bytes(2 * count);
  for (std::uint32_t j = 0; j < count; ++j) {
    bytes[2 * j] = static_cast<std::uint8_t>(variant[j]);
    bytes[2 * j + 1] = static_cast<std::uint8_t>(variant[j] >> 8);
  }
  b.data(table, std::move(bytes), true);
  b.mov(kTable, table);
  b.mov(kPairs, looped / 2);
  const unsigned loop = b.label();
  b.bind(loop);
  for (std::uint32_t h = 0; h < 2; ++h) {
    struct Case {
      std::uint32_t v, first, uses;
    };
    std::vector<Case> cases;
    std::map<std::uint32_t, std::size_t> at;
    for (std::uint32_t j = h; j < looped; j += 2) {
      auto [it, fresh] = at.emplace(variant[j], cases.size());
      if (fresh) cases.push_back({variant[j], j, 0});
      ++cases[it->second].uses;
    }
    std::stable_sort(cases.begin(), cases.end(), [](const Case& x, const Case& y) { return x.uses > y.uses; });
    b.ld(kVariant, 2 * h, 2, kTable);
    std::vector<unsigned> labels(cases.size());
    for (std::size_t c = 0; c + 1 < cases.size(); ++c) {
      labels[c] = b.label();
      b.branch(Cond::Eq, kVariant, cases[c].v, labels[c]);
    }
    const unsigned done = b.label();
    // The last case falls through; the others follow it, each ending with a jump to `done`.
    body(cases.back().first);
    for (std::size_t c = 0; c + 1 < cases.size(); ++c) {
      b.jmp(done);
      b.bind(labels[c]);
      body(cases[c].first);
    }
    b.bind(done);
  }
  b.alu(Op::Add, kTable, kTable, 4);
  b.alu(Op::Sub, kPairs, kPairs, 1);
  b.branch(Cond::Ne, kPairs, 0, loop);
  if (count % 2) body(count - 1);
}

}  // namespace wafersim::models::compiler

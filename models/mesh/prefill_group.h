#pragma once
// A group of consecutive prompt tokens of the prefill (kernels.h, GroupAddrs): what the steps
// over a group share to find its buffers and the PEs that hold its tokens' GEMM blocks.

#include <cstdint>
#include <utility>

#include "models/mesh/kernels.h"
#include "models/mesh/layout.h"

namespace wafersim::models::mesh {

struct PrefillGroup {
  GroupAddrs ga;
  PromptChunk chunk{0};        // the pass's tokens
  std::uint64_t first = 0;     // the group's first (a prompt position)
  std::uint32_t count = 0;     // the group's tokens
  std::uint32_t N = 1, T = 1;  // MeshGEMM's ring positions, its tokens a block
  // The group's tokens in token block j of the chunk: [lo, hi) as indices into the group
  // (lo == hi: none).
  [[nodiscard]] std::pair<std::uint32_t, std::uint32_t> in_block(std::uint64_t j) const;
  // The row of its block that the group's token k takes.
  [[nodiscard]] std::uint32_t row(std::uint32_t k) const {
    return static_cast<std::uint32_t>((first + k - chunk.base) % T);
  }
};

// Contract: 1 <= count <= group and [first, first + count) within the chunk
// (std::logic_error naming `what` otherwise).
PrefillGroup prefill_group_of(const MeshLayout& l, std::uint32_t sram_bytes, PromptChunk chunk, std::uint32_t group,
                              std::uint64_t first, std::uint32_t count, const char* what);

// The token block PE (r, c) starts a product with (ring positions a + b mod N), and the one
// whose outputs of its row it holds after q/k/v's N steps (N, a block of no tokens, where its
// unit's other member along the row holds them).
std::uint64_t start_block(const MeshLayout& l, std::uint32_t r, std::uint32_t c);
std::uint64_t held_block(const MeshLayout& l, std::uint32_t r, std::uint32_t c);

}  // namespace wafersim::models::mesh

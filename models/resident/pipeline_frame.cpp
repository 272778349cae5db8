#include "models/resident/pipeline_frame.h"

#include <algorithm>

#include "models/compiler/sizes.h"

namespace wafersim::models::resident {
using compiler::align8;
using compiler::ceil_div;

std::uint32_t first_input_bytes(const PipelineStage& s, hw::DType dt) {
  if (s.kind == StageKind::Embedding) return s.positions ? 8 : 4;
  return hw::size_of(dt);
}

Frame frame(PipelineCut cut, const PipelineStage& s, bool first, bool last, std::uint64_t tokens, std::uint32_t temps,
            hw::DType dt) {
  const std::uint32_t esz = hw::size_of(dt);
  const std::uint64_t c = cut == PipelineCut::RowsOut ? ceil_div(s.f_out, s.rows) : s.f_out;
  const std::uint64_t k = cut == PipelineCut::RowsIn ? ceil_div(s.f_in, s.rows) : s.f_in;
  Frame f;
  std::uint32_t a = 0;
  auto take = [&](std::uint64_t bytes) {
    const std::uint32_t at = a;
    a += align8(std::max<std::uint64_t>(bytes, 8));
    return at;
  };
  // The row's block of W (rows of the table for an embedding); no matrix for the other kinds.
  const std::uint64_t w_rows = is_linear(s.kind) ? k : s.kind == StageKind::Embedding ? s.vocabulary : 0;
  f.w = take(w_rows * c * esz);
  f.bias = take(c * 4);
  f.acc = take(c * 4);
  f.y = take(c * esz);
  f.fused = take(c * esz);
  f.temps = take(std::uint64_t{temps} * align8(c * esz));
  f.x = first ? take(tokens * s.f_in * first_input_bytes(s, dt))
              : take(2 * std::uint64_t{align8((s.f_in + s.carry_in) * esz)});
  f.out = last ? take(tokens * c * esz) : 0;
  const bool norm = is_norm(s.kind);
  f.stat = norm ? take(4) : 0;
  f.save = norm ? take(16) : 0;
  if (s.kind == StageKind::Embedding && s.positions) f.w2 = take(s.capacity * c * esz);
  if (s.kind == StageKind::LayerNorm) {
    f.wide = take(s.f_in * 4);
    f.beta = take(c * 4);
  }
  if (s.kind == StageKind::Attention) {
    for (std::uint32_t y = 0; y < s.rows; ++y) f.groups = std::max(f.groups, kv_groups(s, y).size());
    const std::uint64_t per = f.groups * s.head_dim * s.capacity;  // cache elements per sequence and tensor
    f.kc = take(s.cache_sequences * per * esz);
    f.vc = take(s.cache_sequences * per * 4);
    f.sc = take(s.capacity * 4);
    f.table = take(tokens * 16);
  }
  if (s.kind == StageKind::Gated) {
    f.w2 = take(k * c * esz);
    f.bias2 = take(c * 4);
    f.y2 = take(c * esz);
  }
  f.end = a;
  return f;
}

}  // namespace wafersim::models::resident

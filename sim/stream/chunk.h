#pragma once
// A chunk: the unit in which weights and gradients move between MemoryX, SwarmX and the
// wafers' edges, carried by a TLM-2.0 generic payload with a ChunkExtension.

#include <tlm>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace wafersim::sim::stream {

enum class Pass : std::uint8_t { Forward, Backward, Gradient };
const char* to_string(Pass p);

// Where a chunk belongs. A weight stream is one layer's weights for one pass of one step;
// its chunks are numbered 0..count-1 over all planes (chunk i travels on plane i % planes).
struct ChunkInfo {
  std::uint32_t stream = 0;  // position of the stream in MemoryX's schedule (weights); 0 for gradients
  std::uint32_t layer = 0;
  Pass pass = Pass::Forward;
  std::uint32_t step = 0;
  std::uint32_t index = 0;   // chunk number within the stream
  std::uint32_t count = 0;   // chunks in the stream (all planes)
  std::uint64_t offset = 0;  // byte offset of the chunk in the layer's tensor
  std::uint32_t bytes = 0;
  bool sparse = false;  // entries of kSparseEntryBytes (value, index) instead of bare FP32 values
  // Same layer, pass, step and chunk (what a reduction must line up).
  [[nodiscard]] bool same_chunk(const ChunkInfo& o) const {
    return layer == o.layer && pass == o.pass && step == o.step && index == o.index && count == o.count &&
           offset == o.offset && bytes == o.bytes && sparse == o.sparse;
  }
  [[nodiscard]] std::string describe() const;
};

// A sparse layer's stream: its kept parameters in increasing position, each an FP32 value
// followed by its position in the layer's flat parameter vector as a uint32 (docs/training.md).
inline constexpr std::uint32_t kSparseValueBytes = 4;
inline constexpr std::uint32_t kSparseIndexBytes = 4;
inline constexpr std::uint32_t kSparseEntryBytes = kSparseValueBytes + kSparseIndexBytes;

// FP32 values of a chunk (a sparse chunk: value, index bits, value, ...); shared, never modified once sent (a broadcast
// forwards the same data to every child). Null in timing-only runs.
using ChunkData = std::shared_ptr<const std::vector<float>>;

struct Chunk {
  ChunkInfo info;
  ChunkData data;
};

// The chunk riding on a tlm_generic_payload (data_ptr/data_length mirror the FP32 values).
class ChunkExtension : public tlm::tlm_extension<ChunkExtension> {
 public:
  Chunk chunk;
  [[nodiscard]] tlm::tlm_extension_base* clone() const override;
  void copy_from(const tlm::tlm_extension_base& other) override;
};

// Number of chunks of at most `chunk_bytes` that `bytes` splits into (0 for 0 bytes).
inline std::uint32_t chunk_count(std::uint64_t bytes, std::uint64_t chunk_bytes) {
  return static_cast<std::uint32_t>((bytes + chunk_bytes - 1) / chunk_bytes);
}
// Size of chunk `index` when `bytes` are cut into `chunk_bytes` pieces (the last may be short).
inline std::uint32_t chunk_size(std::uint64_t bytes, std::uint64_t chunk_bytes, std::uint32_t index) {
  const std::uint64_t start = std::uint64_t{index} * chunk_bytes;
  return static_cast<std::uint32_t>(bytes - start < chunk_bytes ? bytes - start : chunk_bytes);
}

}  // namespace wafersim::sim::stream

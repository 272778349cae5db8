#pragma once
// Chunked kernels in one task: a row's chunks (the blocks of a streamed product, one per
// output slice) run in order, runs of chunks with the same code become a loop, and a
// double-buffered partial-sum buffer is reused only once the asynchronous instruction that
// read it has finished (docs/compiler.md, "Chunk loops"). The code size and the task count no
// longer grow with the number of rows.

#include <cstdint>
#include <functional>
#include <vector>

namespace wafersim::models::compiler {

class ProgramBuilder;

// Chunk j uses buffer j % 2. `async_reader[j]`: the color class of the asynchronous instruction
// of chunk j that reads its buffer (-1: none); `writes[j]`: chunk j writes its buffer. Returns,
// per chunk, the color class whose instructions must have finished before its first write (-1:
// nothing to wait for). Colors are held (docs/isa.md), so an asynchronous instruction on a color
// issues only after every earlier one on that color finished: a reader is known finished once a
// later chunk issued on its color before the write.
std::vector<int> buffer_waits(const std::vector<int>& async_reader, const std::vector<bool>& writes);

// Up to this many chunks a row's code is written out (runs of equal chunks as loops); beyond,
// one loop over all chunks dispatches each through a table in SRAM.
inline constexpr std::uint32_t kStraightChunks = 32;

// SRAM bytes of the chunk table for `count` chunks (0: none needed).
std::uint32_t chunk_table_bytes(std::uint32_t count);

// Emits chunks 0 .. count - 1 in order. `body(j)` emits chunk j's code, which must be a function
// of key(j) and j % 2 only. Up to kStraightChunks chunks: maximal runs of four or more chunks
// with equal keys become a loop over pairs of chunks. Beyond: the distinct keys are the
// variants, `table` (chunk_table_bytes(count) bytes, the same address on every PE) holds each
// chunk's variant as 16 bits (written as the program's initial data), and a loop over pairs of
// chunks loads each chunk's entry and branches to its variant's body (the most frequent
// first). Uses registers r8 (pairs left), r10 (the variant) and r11 (the table pointer), which
// no body may use.
void emit_chunks(ProgramBuilder& b, std::uint32_t count,
                 const std::function<std::vector<std::int64_t>(std::uint32_t)>& key,
                 const std::function<void(std::uint32_t)>& body, std::uint32_t table);

}  // namespace wafersim::models::compiler

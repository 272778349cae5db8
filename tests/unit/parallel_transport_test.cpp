// What crosses between ranks (sim/parallel/transport.h, wire.h, platforms/edge/edge_wire.h):
// the wafers' split into contiguous groups, and messages read back exactly as written.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include "platforms/edge/edge_wire.h"
#include "sim/parallel/transport.h"
#include "sim/parallel/wire.h"

namespace wafersim::parallel_transport_test {
namespace {

using sim::parallel::rank_items;
using sim::parallel::rank_of_item;

TEST(ParallelTransport, WafersSplitIntoContiguousGroupsLargerFirst) {
  EXPECT_EQ(rank_items(4, 3, 0).begin, 0u);
  EXPECT_EQ(rank_items(4, 3, 0).end, 2u);
  EXPECT_EQ(rank_items(4, 3, 1).begin, 2u);
  EXPECT_EQ(rank_items(4, 3, 1).end, 3u);
  EXPECT_EQ(rank_items(4, 3, 2).begin, 3u);
  EXPECT_EQ(rank_items(4, 3, 2).end, 4u);
  EXPECT_EQ(rank_items(3, 1, 0).size(), 3u);
  // Every item in exactly one group, groups in rank order, sizes within one of each other.
  for (std::size_t items = 1; items <= 9; ++items)
    for (unsigned ranks = 1; ranks <= items; ++ranks) {
      std::size_t next = 0;
      for (unsigned r = 0; r < ranks; ++r) {
        const auto g = rank_items(items, ranks, r);
        EXPECT_EQ(g.begin, next);
        EXPECT_GE(g.size(), items / ranks);
        EXPECT_LE(g.size(), items / ranks + 1);
        for (std::size_t i = g.begin; i < g.end; ++i) EXPECT_EQ(rank_of_item(items, ranks, i), r);
        next = g.end;
      }
      EXPECT_EQ(next, items);
    }
  EXPECT_THROW((void)rank_items(3, 2, 2), std::logic_error);
}

TEST(ParallelTransport, OneProcessHasNoOtherRank) {
  sim::parallel::SingleProcess one;
  EXPECT_EQ(one.rank(), 0u);
  EXPECT_EQ(one.ranks(), 1u);
  EXPECT_THROW(one.send(1, "x"), std::logic_error);
  EXPECT_THROW((void)one.receive(1), std::logic_error);
}

TEST(ParallelTransport, AReaderReadsWhatTheWriterWroteAndNoMore) {
  sim::parallel::Writer w;
  w.put<std::uint8_t>(7);
  w.put<std::uint64_t>(1234567890123ULL);
  w.put_vector(std::vector<double>{1.5, -0.0});
  w.put_string("wafer");
  const std::string bytes = w.bytes();
  sim::parallel::Reader r(bytes);
  EXPECT_EQ(r.get<std::uint8_t>(), 7);
  EXPECT_EQ(r.get<std::uint64_t>(), 1234567890123ULL);
  const auto v = r.get_vector<double>();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0], 1.5);
  EXPECT_TRUE(std::signbit(v[1]));
  EXPECT_EQ(r.get_string(), "wafer");
  EXPECT_TRUE(r.done());
  EXPECT_THROW((void)r.get<std::uint8_t>(), std::runtime_error);
  const std::string cut = bytes.substr(0, 12);
  sim::parallel::Reader short_reader(cut);
  short_reader.get<std::uint8_t>();
  short_reader.get<std::uint64_t>();
  EXPECT_THROW((void)short_reader.get_vector<double>(), std::runtime_error);
}

TEST(ParallelTransport, EdgeMessagesCrossBitForBit) {
  using platforms::edge::EdgeMessage;
  platforms::edge::EdgeMessages in(3);
  in[0].at = sim::Picos(100000);
  in[0].kind = EdgeMessage::Kind::Chunk;
  in[0].plane = 1;
  auto& c = in[0].chunk.info;
  c.stream = 5;
  c.layer = 2;
  c.pass = sim::stream::Pass::Backward;
  c.step = 3;
  c.index = 7;
  c.count = 9;
  c.offset = 4096;
  c.bytes = 512;
  c.sparse = true;
  float odd = 0;
  const std::uint32_t nan_bits = 0x7fc01234U;
  std::memcpy(&odd, &nan_bits, sizeof odd);
  in[0].chunk.data = std::make_shared<const std::vector<float>>(std::vector<float>{1.25F, -3.0F, odd});
  in[1].at = sim::Picos(200001);
  in[1].kind = EdgeMessage::Kind::Credit;
  in[1].plane = 0;
  in[2].at = sim::Picos(300000);
  in[2].kind = EdgeMessage::Kind::Chunk;  // timing only: no values
  std::vector<platforms::edge::Interval> compute{{sim::Picos(10), sim::Picos(20)}, {sim::Picos(30), sim::Picos(45)}};

  sim::parallel::Writer w;
  platforms::edge::put_messages(w, in);
  platforms::edge::put_intervals(w, compute);
  const std::string bytes = w.bytes();
  sim::parallel::Reader r(bytes);
  const auto out = platforms::edge::get_messages(r);
  const auto iv = platforms::edge::get_intervals(r);
  EXPECT_TRUE(r.done());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].at, in[0].at);
  EXPECT_EQ(out[0].kind, EdgeMessage::Kind::Chunk);
  EXPECT_EQ(out[0].plane, 1u);
  EXPECT_TRUE(out[0].chunk.info.same_chunk(c));
  EXPECT_EQ(out[0].chunk.info.stream, 5u);
  ASSERT_TRUE(out[0].chunk.data);
  ASSERT_EQ(out[0].chunk.data->size(), 3u);
  EXPECT_EQ(std::memcmp(out[0].chunk.data->data(), in[0].chunk.data->data(), 3 * sizeof(float)), 0);
  EXPECT_EQ(out[1].kind, EdgeMessage::Kind::Credit);
  EXPECT_EQ(out[1].at, sim::Picos(200001));
  EXPECT_FALSE(out[2].chunk.data);
  ASSERT_EQ(iv.size(), 2u);
  EXPECT_EQ(iv[1].start, sim::Picos(30));
  EXPECT_EQ(iv[1].end, sim::Picos(45));
}

}  // namespace
}  // namespace wafersim::parallel_transport_test

// The presets load and their derived figures land near the published numbers
// (docs/facts.md).

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "platforms/figures.h"
#include "platforms/platform_spec.h"

namespace wafersim::platforms::presets_test {
namespace {

void expect_within(double value, double published, double tolerance, const char* what) {
  EXPECT_GE(value, published * (1 - tolerance)) << what << ": " << value << " vs published " << published;
  EXPECT_LE(value, published * (1 + tolerance)) << what << ": " << value << " vs published " << published;
}

TEST(Presets, AllLoadAndValidate) {
  auto names = preset_names();
  std::vector<std::string> expected{"andromeda",      "cs2-cluster", "cs2-cluster-32",
                                    "cs2-cluster-64", "cs3-cluster", "tiny",
                                    "tiny-cluster",   "wse2",        "wse3"};
  EXPECT_EQ(names, expected);
  for (const auto& n : names) {
    EXPECT_NO_THROW(load_platform(n)) << n;
    EXPECT_NO_THROW(load_platform(std::string(WAFERSIM_SOURCE_DIR) + "/platforms/" + n + ".yaml")) << n;
  }
}

TEST(Presets, Wse2FiguresMatchPublishedOnes) {
  auto f = figures(load_platform("wse2").spec);
  EXPECT_EQ(f.pe_count, 757u * 996u);
  // SRAM: 40 GB published (C); 753,972 PEs x 48 KiB = 37.06 GB.
  expect_within(static_cast<double>(f.sram_bytes), 40e9, 0.10, "SRAM bytes");
  // SRAM bandwidth: 20 PB/s published (C); 24 B/cycle/PE (2 x 64-bit reads + 1 write) x 1.1 GHz.
  expect_within(f.sram_bandwidth_bytes_per_s, 20e15, 0.10, "SRAM bandwidth");
  // Dense FP16: about 7.5 PF = 850,000 cores x 4 lanes x 2 x 1.1 GHz (I). The preset models the
  // 757 x 996 programmable fabric, so the per-core rate is compared: exactly 8.8 GFLOP/s per PE,
  // and the wafer figure is within 10% of 7.5 PF scaled to the PEs the fabric exposes.
  EXPECT_DOUBLE_EQ(f.peak_flops_fp16 / static_cast<double>(f.pe_count), 4 * 2 * 1.1e9);
  expect_within(f.peak_flops_fp16, 7.5e15 * static_cast<double>(f.pe_count) / 850000.0, 0.10, "FP16 peak");
  // Fabric: 220 Pb/s published (C) for all links.
  expect_within(f.fabric_total_bits_per_s, 220e15, 0.10, "fabric bandwidth");
  // System I/O: 12 x 100 GbE = 1.2 Tb/s (C).
  EXPECT_DOUBLE_EQ(f.io_bandwidth_bits_per_s, 1.2e12);
  EXPECT_EQ(f.swarmx_depth, 1u);
}

TEST(Presets, Wse3FiguresMatchPublishedOnes) {
  auto f = figures(load_platform("wse3").spec);
  EXPECT_EQ(f.pe_count, 762u * 1172u);
  expect_within(static_cast<double>(f.sram_bytes), 44e9, 0.10, "SRAM bytes");
  // 21 PB/s published for 900,000 cores is 21.2 B/cycle/PE; the preset's ports (U) move
  // 2 x 16 B read + 16 B written a cycle, sized for the 8 FP16 lanes, so the wafer figure is
  // 2.25 times the published one (docs/isa.md, "SRAM").
  EXPECT_EQ(load_platform("wse3").spec.wafer.pe.sram_bytes_per_cycle(), 48u);
  expect_within(f.sram_bandwidth_bytes_per_s, 21e15 * 48.0 / 21.2, 0.05, "SRAM bandwidth");
  expect_within(f.peak_flops_fp16, 15.8e15, 0.10, "FP16 peak");
  expect_within(f.fabric_total_bits_per_s, 214e15, 0.20, "fabric bandwidth");
}

TEST(Presets, ClusterShapes) {
  auto andromeda = figures(load_platform("andromeda").spec);
  EXPECT_EQ(andromeda.systems, 16u);
  // 120 PF dense FP16 published for 16 CS-2 (C): per-core rate as for wse2.
  expect_within(andromeda.systems * andromeda.peak_flops_fp16,
                120e15 * static_cast<double>(andromeda.pe_count) / 850000.0, 0.10, "Andromeda FP16 peak");
  EXPECT_EQ(andromeda.swarmx_depth, 2u);        // 16 systems through 1:4 switches: 4 + 1
  EXPECT_EQ(andromeda.swarmx_nodes, 5u * 12u);  // per plane, 12 planes
  auto tiny = figures(load_platform("tiny-cluster").spec);
  EXPECT_EQ(tiny.systems, 2u);
  EXPECT_EQ(tiny.swarmx_nodes, 1u);
  EXPECT_EQ(tiny.swarmx_depth, 1u);
  auto cs2 = figures(load_platform("cs2-cluster").spec);
  EXPECT_EQ(cs2.swarmx_depth, 1u);
  // MemoryX: about 20 bytes per parameter; 2.4 PB holds 120 T parameters (C).
  auto big = load_platform("andromeda").spec;
  EXPECT_EQ(figures(big).max_params, big.memoryx.capacity_bytes() / 20);
  expect_within(static_cast<double>(figures(big).max_params), 120e12, 0.10, "MemoryX parameters");
  auto cs3 = figures(load_platform("cs3-cluster").spec);
  expect_within(cs3.systems * cs3.peak_flops_fp16, 16 * 15.8e15, 0.10, "16 x CS-3 FP16 peak");
}

TEST(Presets, SwarmXTreeShape) {
  swarmx::SwarmXConfig c;
  using swarmx::tree_shape;
  EXPECT_EQ(tree_shape(1, c).levels, 1u);
  EXPECT_EQ(tree_shape(4, c).switches, 1u);
  EXPECT_EQ(tree_shape(5, c).switches, 3u);  // 2 leaves-level + root
  EXPECT_EQ(tree_shape(64, c).levels, 3u);
  c.fanout = swarmx::Fanout::TwoOneToTwo;
  EXPECT_EQ(tree_shape(4, c).switches, 3u);
  EXPECT_EQ(tree_shape(4, c).nodes_per_plane, 2u);
  EXPECT_EQ(tree_shape(4, c).levels, 2u);
}

// Every value line of a hardware preset carries a comment with its source tag.
TEST(Presets, EveryNumberCarriesASourceTag) {
  // "  key: value ..." (a key with a value on the same line, not a comment or a mapping).
  auto value_line = [](const std::string& line) {
    std::size_t i = line.find_first_not_of(' ');
    std::size_t colon = line.find(':');
    if (i == std::string::npos || colon == std::string::npos || line[i] == '#' || line[i] == '-') return false;
    for (std::size_t k = i; k < colon; ++k)
      if (!(std::islower(static_cast<unsigned char>(line[k])) || std::isdigit(static_cast<unsigned char>(line[k])) ||
            line[k] == '_'))
        return false;
    std::size_t v = line.find_first_not_of(' ', colon + 1);
    return v != std::string::npos && line[v] != '#';
  };
  // A comment holding a source tag C, S, I or U as a word, or a stated reason.
  auto tagged = [](const std::string& line) {
    std::size_t hash = line.find('#');
    if (hash == std::string::npos) return false;
    std::string c = " " + line.substr(hash + 1) + " ";
    for (const char* tag : {"C", "S", "I", "U"})
      for (std::size_t p = c.find(tag); p != std::string::npos; p = c.find(tag, p + 1))
        if (!std::isalnum(static_cast<unsigned char>(c[p - 1])) && !std::isalnum(static_cast<unsigned char>(c[p + 1])))
          return true;
    for (const char* why : {"simulator setting", "single-system preset", "assumed"})
      if (c.find(why) != std::string::npos) return true;
    return false;
  };
  for (const char* name : {"wse2", "wse3", "cs2-cluster", "andromeda", "cs3-cluster"}) {
    std::ifstream in(std::string(WAFERSIM_SOURCE_DIR) + "/platforms/" + name + ".yaml");
    ASSERT_TRUE(in) << name;
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (!value_line(line)) continue;
      if (line.find("name:") != std::string::npos || line.find("description:") != std::string::npos ||
          line.find("base:") != std::string::npos || line.find("systems:") != std::string::npos)
        continue;
      EXPECT_TRUE(tagged(line)) << name << ".yaml:" << n << ": " << line;
    }
  }
}

TEST(Presets, DocsTableIsCurrent) {
  std::ifstream in(std::string(WAFERSIM_SOURCE_DIR) + "/docs/platform-config.md");
  ASSERT_TRUE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find(platform_schema_markdown()), std::string::npos)
      << "docs/platform-config.md is stale: regenerate it with 'wafersim schema --markdown'";
}

}  // namespace
}  // namespace wafersim::platforms::presets_test

// Platform configuration: `base:` and --set semantics, and the diagnostics for bad input.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "platforms/platform_spec.h"
#include "tests/support/temp_dir.h"

namespace wafersim::platforms::config_test {
namespace {
using sim::config::ConfigError;
using sim::config::Diagnostic;

// Loads and expects exactly one diagnostic; returns it.
Diagnostic one_error(const std::string& path, const std::vector<std::string>& set = {}) {
  try {
    load_platform(path, set);
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.diagnostics().size(), 1u) << e.what();
    EXPECT_EQ(e.exit_code(), 2);
    return e.diagnostics().front();
  }
  ADD_FAILURE() << path << " loaded without error";
  return {};
}

void expect_at(const Diagnostic& d, const std::string& file, int line, int col, const std::string& key,
               const std::string& fragment) {
  EXPECT_EQ(d.location.file, file) << d.str();
  EXPECT_EQ(d.location.line, line) << d.str();
  EXPECT_EQ(d.location.column, col) << d.str();
  EXPECT_EQ(d.key_path, key) << d.str();
  EXPECT_NE(d.message.find(fragment), std::string::npos) << d.str();
  // The rendered form follows the compiler convention.
  EXPECT_EQ(d.str().rfind(fmt::format("{}:{}:{}: error: ", file, line, col), 0), 0u) << d.str();
}

class ConfigErrors : public ::testing::Test {
 protected:
  test::TempDir dir;
};

TEST_F(ConfigErrors, WrongType) {
  auto f = dir.write("p.yaml", "base: tiny\nwafer:\n  width: eight\n");
  expect_at(one_error(f), f, 3, 10, "wafer.width", "expected an integer in 1 .. 4096, found 'eight'");
}

TEST_F(ConfigErrors, MappingWhereAValueBelongs) {
  auto f = dir.write("p.yaml", "wafer:\n  clock:\n    ghz: 1\n");
  expect_at(one_error(f), f, 3, 5, "wafer.clock", "expected a frequency value, found a mapping");
}

TEST_F(ConfigErrors, UnknownKeyWithSuggestion) {
  auto f = dir.write("p.yaml", "wafer:\n  pe:\n    sram:\n      sise: 48 KiB\n");
  expect_at(one_error(f), f, 4, 7, "wafer.pe.sram.sise", "unknown key; did you mean 'size'?");
}

TEST_F(ConfigErrors, UnknownTopLevelKeyListsValidKeys) {
  auto f = dir.write("p.yaml", "zzzzzz: 1\n");
  auto d = one_error(f);
  expect_at(d, f, 1, 1, "zzzzzz", "unknown key");
  EXPECT_NE(d.message.find("valid keys here: name, description, wafer"), std::string::npos);
}

TEST_F(ConfigErrors, OutOfRange) {
  auto f = dir.write("p.yaml", "fabric:\n  colors: 99\n");
  expect_at(one_error(f), f, 2, 11, "fabric.colors", "expected an integer in 1 .. 64, found 99");
}

TEST_F(ConfigErrors, QuantityOutOfRange) {
  auto f = dir.write("p.yaml", "wafer:\n  clock: 1 kHz\n");
  expect_at(one_error(f), f, 2, 10, "wafer.clock", "expected a frequency in 1 MHz .. 100 GHz, found 1 kHz");
}

TEST_F(ConfigErrors, MissingBaseFile) {
  auto f = dir.write("p.yaml", "name: x\nbase: nowhere.yaml\n");
  expect_at(one_error(f), f, 2, 7, "base", "cannot open");
}

TEST_F(ConfigErrors, MissingTopLevelFile) {
  auto d = one_error((dir.path() / "absent.yaml").string());
  EXPECT_NE(d.message.find("cannot open"), std::string::npos);
  EXPECT_EQ(d.location.file, (dir.path() / "absent.yaml").string());
}

TEST_F(ConfigErrors, BadUnit) {
  auto f = dir.write("p.yaml", "wafer:\n  pe:\n    sram:\n      size: 48 KB\n");
  expect_at(one_error(f), f, 4, 16, "wafer.pe.sram.size", "ambiguous prefix 'K'");
}

TEST_F(ConfigErrors, BareNumberWhereAUnitIsNeeded) {
  auto f = dir.write("p.yaml", "wafer:\n  clock: 1100000000\n");
  expect_at(one_error(f), f, 2, 10, "wafer.clock", "bare number '1100000000'");
}

TEST_F(ConfigErrors, CycleInBaseChain) {
  dir.write("a.yaml", "base: b.yaml\n");
  auto b = dir.write("b.yaml", "name: b\nbase: a.yaml\n");
  auto d = one_error((dir.path() / "a.yaml").string());
  expect_at(d, b, 2, 7, "base", "'base:' chain forms a cycle: a.yaml -> b.yaml -> a.yaml");
}

TEST_F(ConfigErrors, MalformedYaml) {
  auto f = dir.write("p.yaml", "wafer:\n  width: [8, 9\n");
  auto d = one_error(f);
  EXPECT_EQ(d.location.file, f);
  EXPECT_EQ(d.location.line, 3);
  EXPECT_NE(d.message.find("malformed YAML"), std::string::npos);
}

TEST_F(ConfigErrors, DuplicateKey) {
  auto f = dir.write("p.yaml", "wafer:\n  width: 8\n  height: 8\n  width: 16\n");
  expect_at(one_error(f), f, 4, 3, "width", "duplicate key 'width' (first given at line 2, column 3)");
}

TEST_F(ConfigErrors, EmptyFile) {
  auto f = dir.write("p.yaml", "");
  expect_at(one_error(f), f, 1, 1, "", "empty file");
}

TEST_F(ConfigErrors, CommentsOnlyIsEmpty) {
  auto f = dir.write("p.yaml", "# nothing here\n");
  expect_at(one_error(f), f, 1, 1, "", "empty file");
}

TEST_F(ConfigErrors, TopLevelList) {
  auto f = dir.write("p.yaml", "- a\n- b\n");
  expect_at(one_error(f), f, 1, 1, "", "expected a mapping of settings at the top level, found a list");
}

TEST_F(ConfigErrors, BadChoiceWithSuggestion) {
  auto f = dir.write("p.yaml", "swarmx:\n  fanout: \"1:3\"\n");
  expect_at(one_error(f), f, 2, 11, "swarmx.fanout", "expected one of 1:4, 2x1:2, found '1:3'; did you mean '1:4'?");
}

TEST_F(ConfigErrors, CrossFieldCheck) {
  auto f = dir.write("p.yaml", "wafer:\n  pe:\n    sram:\n      size: 1025 B\n");
  expect_at(one_error(f), f, 4, 13, "wafer.pe.sram.size", "not a whole number of 8 banks x 4 B words");
}

TEST_F(ConfigErrors, RangeDependsOnAnotherKey) {
  auto f = dir.write("p.yaml", "wafer:\n  width: 4\n  height: 4\nfabric:\n  edge_io_channels: 5\n");
  expect_at(one_error(f), f, 5, 21, "fabric.edge_io_channels", "expected an integer in 0 .. 4, found 5");
}

TEST_F(ConfigErrors, EveryErrorIsReportedAtOnce) {
  auto f = dir.write("p.yaml", "wafer:\n  width: x\n  heigth: 8\nfabric:\n  colors: 0\n");
  try {
    load_platform(f);
    FAIL();
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.diagnostics().size(), 3u) << e.what();
    EXPECT_EQ(e.diagnostics()[0].location.line, 2);
    EXPECT_EQ(e.diagnostics()[1].location.line, 3);
    EXPECT_NE(e.diagnostics()[1].message.find("did you mean 'height'?"), std::string::npos);
    EXPECT_EQ(e.diagnostics()[2].location.line, 5);
  }
}

TEST_F(ConfigErrors, SetOverrideWithUnknownKey) {
  auto d = one_error("tiny", {"fabric.colors=8", "wafer.widht=16"});
  expect_at(d, "<command line>", 2, 7, "wafer.widht", "did you mean 'width'?");
}

TEST_F(ConfigErrors, SetOverrideWithBadValue) {
  auto d = one_error("tiny", {"wafer.clock=fast"});
  expect_at(d, "<command line>", 1, 13, "wafer.clock", "expected a frequency such as '1.1 GHz'");
}

TEST_F(ConfigErrors, SetOverrideWithoutEquals) {
  auto d = one_error("tiny", {"wafer.clock"});
  EXPECT_NE(d.message.find("--set expects key.path=value"), std::string::npos);
}

TEST_F(ConfigErrors, SetThroughAScalar) {
  auto d = one_error("tiny", {"wafer.width.x=3"});
  EXPECT_EQ(d.key_path, "wafer.width");
  EXPECT_NE(d.message.find("not a mapping"), std::string::npos);
}

TEST(ConfigSemantics, BaseChainMergesDeeplyAndRelativeToTheIncludingFile) {
  test::TempDir dir;
  dir.write("common/base.yaml", "name: base\nwafer:\n  width: 8\n  height: 8\n  pe:\n    microthreads: 4\n");
  auto f = dir.write("derived.yaml", "base: common/base.yaml\nname: derived\nwafer:\n  height: 16\n");
  auto p = load_platform(f).spec;
  EXPECT_EQ(p.name, "derived");
  EXPECT_EQ(p.wafer.width, 8u);                         // from the base
  EXPECT_EQ(p.wafer.height, 16u);                       // overridden
  EXPECT_EQ(p.wafer.pe.microthreads, 4u);               // nested keys survive a partial override
  EXPECT_EQ(p.wafer.pe.sram.size.bytes(), 48u * 1024);  // defaults fill the rest
}

TEST(ConfigSemantics, SetOverridesApplyInOrderAfterTheFile) {
  auto p =
      load_platform("tiny", {"wafer.width=16", "wafer.width=12", "fabric.hop_latency=2 cycles", "wafer.clock=850 MHz"})
          .spec;
  EXPECT_EQ(p.wafer.width, 12u);
  EXPECT_EQ(p.fabric.hop_latency, sim::Cycle(2));
  EXPECT_EQ(p.wafer.clock.hz, 850e6);
}

TEST(ConfigSemantics, SetCanAddAMapping) {
  auto p = load_platform("tiny", {"wafer.pe.simd_lanes={fp16: 8, bf16: 8}"}).spec;
  EXPECT_EQ(p.wafer.pe.simd_lanes.fp16, 8u);
  EXPECT_EQ(p.wafer.pe.simd_lanes.bf16, 8u);
  EXPECT_EQ(p.wafer.pe.simd_lanes.fp32, 1u);
}

TEST(ConfigSemantics, ResolvedConfigReproducesTheSpec) {
  test::TempDir dir;
  for (const auto& name : preset_names()) {
    auto first = load_platform(name, {"fabric.queue_depth=3"});
    auto path = dir.write(name + "-resolved.yaml", first.resolved_yaml);
    auto second = load_platform(path);
    EXPECT_EQ(second.resolved_yaml.substr(second.resolved_yaml.find("\nname:")),
              first.resolved_yaml.substr(first.resolved_yaml.find("\nname:")))
        << name;
    EXPECT_EQ(second.spec.fabric.queue_depth, 3u);
    EXPECT_EQ(second.spec.wafer.clock, first.spec.wafer.clock);
    EXPECT_EQ(second.spec.memoryx.dram.capacity, first.spec.memoryx.dram.capacity);
  }
}

TEST(ConfigSemantics, SchemaDocumentsEveryKey) {
  auto docs = platform_schema();
  ASSERT_GT(docs.size(), 40u);
  for (const auto& d : docs) {
    EXPECT_FALSE(d.description.empty()) << d.path;
    EXPECT_FALSE(d.range.empty()) << d.path;
  }
}

}  // namespace
}  // namespace wafersim::platforms::config_test

namespace wafersim::platforms::config_test {
namespace {

// yaml-cpp's LoadAll never returns on "," (found by fuzz_routes): the loader must not hang.
TEST(ConfigRegressions, LoneCommaIsAnErrorNotAHang) {
  test::TempDir dir;
  for (const char* text : {",", ",\xff\xff\x7f", "name: x\n,\n"}) {
    auto f = dir.write("p.yaml", text);
    try {
      load_platform(f);
      ADD_FAILURE() << "no error for " << text;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.diagnostics().front().location.file, f);
    }
  }
}

}  // namespace
}  // namespace wafersim::platforms::config_test

// The command line's edges for people building on wafersim: unknown commands named, checked
// choices, no empty run folder after bad input, compile's platform, VCD's default routers,
// examples in every help, sparsity refused where it cannot apply, the optimizer from the
// model file.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::cli_users_test {
namespace {
using test::slurp;
using test::wafersim;
namespace fs = std::filesystem;

TEST(CliEdges, UnknownCommandIsNamedWithASuggestion) {
  const auto r = wafersim("rnu tiny", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown command 'rnu'; did you mean 'run'?"), std::string::npos) << r.out;
  const auto far = wafersim("frobnicate", true);
  EXPECT_EQ(far.code, 2);
  EXPECT_NE(far.out.find("unknown command 'frobnicate'\n"), std::string::npos) << far.out;
}

TEST(CliEdges, ClosedSetsAreCheckedChoices) {
  for (const char* line :
       {"train tiny-cluster --model tiny-mlp --optimizer adamx",
        "train tiny-cluster --model tiny-mlp --timing simulate",
        "train tiny-cluster --model tiny-mlp --wafer-arithmetic hosts", "traffic tiny --rate 0.1 --pattern unifrom",
        "memoryx-plan tiny --params 1e6 --optimizer x", "run tiny --trace windows --trace-colors maybe"}) {
    const auto r = wafersim(line, true);
    EXPECT_EQ(r.code, 2) << line;
    EXPECT_NE(r.out.find("' is not one of {"), std::string::npos) << line << "\n" << r.out;
  }
  const auto hint = wafersim("train tiny-cluster --model tiny-mlp --optimizer adamx", true);
  EXPECT_NE(hint.out.find("--optimizer: 'adamx' is not one of {sgd,momentum,adam,adamw}; did you mean 'adam'?"),
            std::string::npos)
      << hint.out;
  const auto help = wafersim("train --help");
  EXPECT_NE(help.out.find("{sgd,momentum,adam,adamw}"), std::string::npos) << help.out;
}

TEST(CliEdges, BadInputAfterTheFolderIsMadeLeavesNoFolder) {
  test::TempDir tmp;
  const fs::path out = tmp.path() / "never";
  const auto r = wafersim("traffic tiny --rate 0.1 --trace windows --trace-pes 99,99 -o " + out.string(), true);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--trace-pes"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
  // A folder that existed before is left alone.
  fs::create_directories(out);
  EXPECT_EQ(wafersim("traffic tiny --rate 0.1 --trace windows --trace-pes 99,99 -o " + out.string()).code, 2);
  EXPECT_TRUE(fs::is_directory(out));
}

TEST(CliEdges, CompileTakesItsPlatformLikeRun) {
  const auto now = wafersim("compile tiny --model tiny-mlp --json", true);
  ASSERT_EQ(now.code, 0) << now.out;
  EXPECT_EQ(now.out.find("note:"), std::string::npos) << now.out;
  const auto j = nlohmann::json::parse(now.out);
  EXPECT_EQ(j["platform"], "tiny");
  EXPECT_EQ(j["model"], "tiny-mlp");
  const auto old = wafersim("compile tiny-mlp --platform tiny --json");
  ASSERT_EQ(old.code, 0);
  EXPECT_EQ(nlohmann::json::parse(old.out), j);
  const auto old_short = wafersim("compile tiny-mlp -p tiny", true);
  EXPECT_EQ(old_short.code, 0);
  EXPECT_NE(old_short.out.find("note: 'wafersim compile MODEL --platform PLATFORM' is now 'wafersim compile PLATFORM "
                               "--model MODEL'"),
            std::string::npos)
      << old_short.out;
  EXPECT_EQ(wafersim("compile tiny").code, 2);
}

TEST(CliEdges, VcdWithoutTracePesProbesTheCentre) {
  test::TempDir tmp;
  const fs::path out = tmp.path() / "v";
  const auto r = wafersim("traffic tiny --rate 0.1 --measure 200 --trace all -o " + out.string(), true);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto meta = nlohmann::json::parse(slurp(out / "trace" / "meta.json"));
  EXPECT_EQ(meta["selection"]["pes"], nlohmann::json::array({"3,3:5,5"})) << meta["selection"];
  EXPECT_EQ(meta["selection"]["pes_default"], true);
  const std::string vcd = slurp(out / "trace" / "routers.vcd");
  EXPECT_NE(vcd.find("r4_4"), std::string::npos);
  EXPECT_EQ(vcd.find("r0_0"), std::string::npos);
}

// The commands `wafersim --help` lists, in its order.
std::vector<std::string> listed_commands() {
  const std::string help = wafersim("--help").out;
  std::istringstream in(help.substr(help.find("Subcommands:\n") + 13));
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line) && line.rfind("  ", 0) == 0;)
    names.push_back(line.substr(2, line.find(' ', 2) - 2));
  return names;
}

TEST(CliEdges, EveryCommandsHelpHasExamples) {
  const auto commands = listed_commands();
  ASSERT_GE(commands.size(), 16u);
  EXPECT_EQ(commands.front(), "run");
  EXPECT_EQ(commands.back(), "yield");
  for (const std::string& cmd : commands) {
    const auto r = wafersim(cmd + " --help");
    EXPECT_EQ(r.code, 0) << cmd;
    const auto examples = r.out.find("Examples:\n  wafersim ");
    ASSERT_NE(examples, std::string::npos) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find("  wafersim " + cmd + " ", examples), std::string::npos) << cmd << "\n" << r.out;
  }
}

TEST(CliEdges, SparsityIsRefusedWhereItCannotApply) {
  test::TempDir tmp;
  const std::string model = tmp.write("sparse.yaml", "base: tiny-mlp\nsparsity: {density: 0.5}\n");
  for (const std::string cmd : {"run tiny --model ", "infer tiny --placement streaming --model "}) {
    const auto r = wafersim(cmd + model + " -o " + (tmp.path() / "x").string(), true);
    EXPECT_EQ(r.code, 2) << cmd << r.out;
    EXPECT_NE(r.out.find("model 'tiny-mlp': sparsity: 2 sparse layer(s), but 'wafersim"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(tmp.path() / "x"));
  }
  // compile maps it densely and says where it applies; a replayed training run on the single-wafer
  // platform (its MemoryX streams only the kept weights) stores about half the parameters, and the
  // co-simulation, whose wafers run the dense programs, refuses it.
  const auto compiled = wafersim("compile tiny --model " + model);
  EXPECT_EQ(compiled.code, 0);
  EXPECT_NE(compiled.out.find(
                "2 sparse layer(s): applies to replayed training runs (wafersim train --cluster-model replay); this "
                "mapping is dense"),
            std::string::npos)
      << compiled.out;
  const auto params = [&](const std::string& m, const std::string& name) {
    const fs::path dir = tmp.path() / name;
    EXPECT_EQ(wafersim("train tiny --steps 1 --cluster-model replay --model " + m + " -o " + dir.string()).code, 0);
    return nlohmann::json::parse(slurp(dir / "stats.json"))["stats"]["cluster"]["memoryx"]["optimizer"]["params"];
  };
  EXPECT_EQ(params("tiny-mlp", "dense"), 808);
  EXPECT_EQ(params(model, "sparse"), 424);
  const auto cosim = wafersim("train tiny --steps 1 --model " + model + " -o " + (tmp.path() / "y").string(), true);
  EXPECT_EQ(cosim.code, 2);
  EXPECT_NE(cosim.out.find("sparse layer 'fc1': the compiled programs are dense"), std::string::npos) << cosim.out;
}

std::vector<double> losses(const std::string& extra) {
  const auto r = wafersim("train tiny-cluster --model tiny-mlp --functional --steps 3 --json " + extra);
  EXPECT_EQ(r.code, 0) << extra;
  return nlohmann::json::parse(r.out)["losses"].get<std::vector<double>>();
}

TEST(Optimizer, WeightDecayAndScheduleFromTheModelFileChangeTraining) {
  const auto adam = losses("");
  ASSERT_EQ(adam.size(), 3u);
  // AdamW without weight decay is Adam; with it (from --model-set) the second step differs.
  EXPECT_EQ(losses("--optimizer adamw"), adam);
  const auto decayed = losses("--model-set optimizer.kind=adamw --model-set optimizer.weight_decay=0.5");
  EXPECT_EQ(decayed[0], adam[0]);
  EXPECT_NE(decayed[1], adam[1]);
  EXPECT_EQ(losses("--optimizer adamw --model-set optimizer.weight_decay=0.5"), decayed);
  // A cosine decay over the run's 3 steps after 1 warm-up step: updates 1 and 2 at the base
  // rate (warm-up 1/1, cosine at 0), update 3 at half of it.
  const auto cosine =
      losses("--model-set optimizer.schedule.decay=cosine --model-set optimizer.schedule.warmup_steps=1");
  EXPECT_EQ(cosine[0], adam[0]);
  EXPECT_EQ(cosine[1], adam[1]);
  EXPECT_NE(cosine[2], adam[2]);
  const auto r = wafersim("train tiny-cluster --model tiny-mlp --model-set optimizer.beta1=1", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("<command line>:1:17: error: optimizer.beta1: expected a value below 1"), std::string::npos)
      << r.out;
}

TEST(Optimizer, TrainingJsonRecordsTheSettings) {
  test::TempDir tmp;
  const auto r = wafersim(
      "train tiny-cluster --model tiny-mlp --optimizer sgd --learning-rate 0.5 "
      "--model-set optimizer.weight_decay=0.25 -o " +
      (tmp.path() / "t").string());
  ASSERT_EQ(r.code, 0);
  const auto j = nlohmann::json::parse(slurp(tmp.path() / "t" / "training.json"))["optimizer_settings"];
  EXPECT_EQ(j["kind"], "sgd");
  EXPECT_EQ(j["learning_rate"], 0.5);
  EXPECT_EQ(j["weight_decay"], 0.25);
  EXPECT_EQ(j["schedule"]["decay"], "constant");
  EXPECT_EQ(j["schedule"]["steps"], 1);
}

}  // namespace
}  // namespace wafersim::cli_users_test

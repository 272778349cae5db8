// PE tracing as `wafersim exec --trace` runs it: the PE windows (busy cycles, work, stalls by
// cause, SRAM) add up exactly to the cores' statistics and land in the window of their
// cycle, also across cycles the engine skips while a core waits out a long operation; the
// traced PEs' tasks and vector operations are timeline slices at their exact cycles; layer
// phases from the runtime; traced runs are byte-identical run to run and leave stats.json
// as it is without tracing.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "platforms/platform_spec.h"
#include "platforms/run_trace.h"
#include "platforms/wafer.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::trace_core_test {
namespace {

using test::slurp;
using test::wafersim;
using Json = nlohmann::json;

const std::string kExamples = std::string(WAFERSIM_SOURCE_DIR) + "/examples/programs/";

// The rows of a window table: header names and rows of numbers.
struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::uint64_t>> rows;
  [[nodiscard]] std::size_t col(const std::string& name) const {
    for (std::size_t i = 0; i < columns.size(); ++i)
      if (columns[i] == name) return i;
    ADD_FAILURE() << "no column " << name;
    return 0;
  }
  // Sum of a column over the rows of PE (x, y), or all rows.
  [[nodiscard]] std::uint64_t sum(const std::string& name, int x = -1, int y = -1) const {
    const std::size_t c = col(name), cx = col("x"), cy = col("y");
    std::uint64_t s = 0;
    for (const auto& r : rows)
      if (x < 0 || (r[cx] == static_cast<std::uint64_t>(x) && r[cy] == static_cast<std::uint64_t>(y))) s += r[c];
    return s;
  }
};

Table read_table(const std::filesystem::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  Table t;
  std::string line, item;
  std::getline(in, line);
  std::stringstream hs(line);
  while (std::getline(hs, item, ',')) t.columns.push_back(item);
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::vector<std::uint64_t> f;
    while (std::getline(ss, item, ',')) f.push_back(std::stoull(item));
    EXPECT_EQ(f.size(), t.columns.size()) << line;
    t.rows.push_back(f);
  }
  return t;
}

Json stats_of(const std::filesystem::path& run) {
  return Json::parse(slurp(run / "stats.json"))["stats"]["cluster"]["wafer0"]["cores"];
}

// The timeline's complete slices of one process and thread, as (name, start_cycle, cycles).
std::vector<std::tuple<std::string, std::uint64_t, std::uint64_t>> slices(const Json& timeline,
                                                                          const std::string& process,
                                                                          const std::string& thread) {
  std::map<std::pair<int, int>, std::string> threads;
  std::map<int, std::string> processes;
  for (const auto& e : timeline["traceEvents"]) {
    if (e["ph"] != "M") continue;
    if (e["name"] == "process_name") processes[e["pid"].get<int>()] = e["args"]["name"];
    if (e["name"] == "thread_name") threads[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"];
  }
  std::vector<std::tuple<std::string, std::uint64_t, std::uint64_t>> out;
  for (const auto& e : timeline["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const int pid = e["pid"].get<int>(), tid = e["tid"].get<int>();
    if (processes[pid] != process || threads[{pid, tid}] != thread) continue;
    out.emplace_back(e["name"].get<std::string>(), e["args"]["start_cycle"].get<std::uint64_t>(),
                     e["args"]["cycles"].get<std::uint64_t>());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return std::get<1>(a) < std::get<1>(b); });
  return out;
}

std::string stream_args(const std::filesystem::path& out) {
  return "exec tiny --program " + kExamples + "stream.s --routes " + kExamples + "stream-routes.yaml --json -o " +
         out.string();
}

// Producer (0, 0) streams 12 values three hops east to (3, 0) (examples/programs/stream.s):
// the PE windows add up to the cores' statistics, per PE and per stall cause; SRAM in use is
// each program's 24 bytes.
TEST(TraceCore, ExecWindowsAddUpToTheCoreStatistics) {
  test::TempDir tmp;
  const auto r = wafersim(stream_args(tmp.path() / "s") + " --trace windows --trace-window 4");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json cores = stats_of(tmp.path() / "s");
  const Table pe = read_table(tmp.path() / "s/trace/pe-w0.csv");
  const Table sram = read_table(tmp.path() / "s/trace/sram-w0.csv");
  ASSERT_FALSE(pe.rows.empty());
  EXPECT_EQ(pe.sum("busy"), cores["busy_cycles"].get<std::uint64_t>());
  EXPECT_EQ(pe.sum("instructions"), cores["instructions"].get<std::uint64_t>());
  EXPECT_EQ(pe.sum("vector_elements"), cores["vector_elements"].get<std::uint64_t>());
  EXPECT_EQ(pe.sum("flops"), cores["flops"].get<std::uint64_t>());
  EXPECT_EQ(pe.sum("wavelets_in"), 12u);
  EXPECT_EQ(pe.sum("wavelets_out"), 12u);
  for (const auto& [cause, v] : cores["stall"].items())
    EXPECT_EQ(pe.sum("stall_" + cause), v.get<std::uint64_t>()) << cause;
  EXPECT_EQ(pe.sum("stall_fabric_in", 3, 0), 5u);  // as exec reports for stream.s
  const auto per_pe = cores["per_pe"]["busy_cycles"];
  for (int x : {0, 3}) EXPECT_EQ(pe.sum("busy", x, 0), per_pe[x].get<std::uint64_t>()) << x;
  EXPECT_EQ(pe.sum("busy", 1, 0), 0u);
  EXPECT_EQ(sram.sum("reads"), cores["sram_reads"].get<std::uint64_t>());
  EXPECT_EQ(sram.sum("writes"), cores["sram_writes"].get<std::uint64_t>());
  EXPECT_EQ(sram.sum("bytes_read"), cores["sram_bytes_read"].get<std::uint64_t>());
  EXPECT_EQ(sram.sum("bytes_written"), cores["sram_bytes_written"].get<std::uint64_t>());
  // in_use is a level: 12 f16 values (data and descriptor of the producer, descriptor of the consumer).
  for (const auto& row : sram.rows) EXPECT_EQ(row[sram.col("in_use")], 24u);
  const Json meta = Json::parse(slurp(tmp.path() / "s/trace/meta.json"));
  EXPECT_TRUE(meta["pe"]["recorded"].get<bool>());
  EXPECT_EQ(meta["pe"]["wafers"][0]["totals"]["busy"], cores["busy_cycles"]);
  EXPECT_EQ(meta["pe"]["wafers"][0]["pes_loaded"], 2);
  EXPECT_EQ(meta["sram"]["wafers"][0]["capacity_bytes"], 48 * 1024);
}

// One PE waits out two 200-cycle scalar exponentials: the engine skips those cycles, yet with
// one-cycle windows every cycle of the task from 0 to its end has exactly one busy cycle,
// and none after; the task's slice covers exactly those cycles; no idle skipping changes no
// byte of the PE windows or the timeline.
TEST(TraceCore, EachBusyCycleCountsInTheWindowOfItsCycleAcrossSkippedCycles) {
  test::TempDir tmp;
  const std::string prog = tmp.write("wait.s",
                                     ".pe 2, 1\n.task main, 0\n.entry main\nmain:\n  mov r1, 0\n  fexp.f32 r1, r1\n"
                                     "  fexp.f32 r1, r1\n  ret\n");
  const std::string args = "exec tiny --set \"wafer.pe.latency.exp=200 cycles\" --program " + prog +
                           " --trace windows,timeline --trace-pes 2,1 --trace-window 1 --json -o ";
  const auto a = wafersim(args + (tmp.path() / "a").string());
  ASSERT_EQ(a.code, 0) << a.out;
  // task switch 2: mov at 2, fexp at 3 (until 203), fexp at 203 (until 403), ret at 403.
  EXPECT_EQ(Json::parse(a.out)["cycles"], 404);
  const Table pe = read_table(tmp.path() / "a/trace/pe-w0.csv");
  std::vector<std::uint64_t> busy(500, 0);
  for (const auto& row : pe.rows) busy.at(row[0]) += row[pe.col("busy")];
  for (std::uint64_t w = 0; w < busy.size(); ++w) EXPECT_EQ(busy[w], w < 404 ? 1u : 0u) << "window " << w;
  const Json timeline = Json::parse(slurp(tmp.path() / "a/trace/timeline.json"));
  const auto tasks = slices(timeline, "wafer0 PE 2,1", "tasks");
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0], std::make_tuple(std::string("main"), 0u, 404u));

  const auto b = wafersim(args + (tmp.path() / "b").string() + " --no-idle-skip");
  ASSERT_EQ(b.code, 0) << b.out;
  for (const char* f : {"trace/pe-w0.csv", "trace/sram-w0.csv", "trace/fabric-w0.csv", "trace/timeline.json"})
    EXPECT_EQ(slurp(tmp.path() / "a" / f), slurp(tmp.path() / "b" / f)) << f;
}

// The traced PEs' tasks and vector operations at their exact cycles: the consumer's fmul
// ends at cycle 25, when its tsc reads 25 (stream.s); the producer's fmov sends one wavelet
// per cycle; untraced PEs get no track.
TEST(TraceCore, TasksAndVectorOperationsOfTheTracedPes) {
  test::TempDir tmp;
  const auto r =
      wafersim(stream_args(tmp.path() / "s") + " --dump 3,0:0x200:1:u32 --trace timeline --trace-pes \"0,0;3,0\"");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Json::parse(r.out)["dumps"][0]["values"][0], 25);
  const Json timeline = Json::parse(slurp(tmp.path() / "s/trace/timeline.json"));
  const auto consumer = slices(timeline, "wafer0 PE 3,0", "tasks");
  ASSERT_EQ(consumer.size(), 2u);  // the task, and its synchronous fmul nested in it
  EXPECT_EQ(std::get<0>(consumer[0]), "main");
  EXPECT_EQ(std::get<1>(consumer[0]), 0u);
  EXPECT_EQ(std::get<0>(consumer[1]), "fmul.f16");
  EXPECT_EQ(std::get<1>(consumer[1]) + std::get<2>(consumer[1]), 25u);
  EXPECT_LE(std::get<1>(consumer[1]) + std::get<2>(consumer[1]), std::get<1>(consumer[0]) + std::get<2>(consumer[0]));
  const auto producer = slices(timeline, "wafer0 PE 0,0", "tasks");
  ASSERT_EQ(producer.size(), 2u);
  EXPECT_EQ(std::get<0>(producer[1]), "fmov.f16");
  EXPECT_TRUE(slices(timeline, "wafer0 PE 1,0", "tasks").empty());
}

// Asynchronous vector operations go on their microthread's track (examples/programs/tasks.s:
// two 128-element copies on microthreads, then three tasks).
TEST(TraceCore, AsyncOperationsGetTheirMicrothreadsTrack) {
  test::TempDir tmp;
  const auto r = wafersim("exec tiny --program " + kExamples + "tasks.s --json --trace timeline --trace-pes 0,0 -o " +
                          (tmp.path() / "t").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const Json timeline = Json::parse(slurp(tmp.path() / "t/trace/timeline.json"));
  const auto tasks = slices(timeline, "wafer0 PE 0,0", "tasks");
  std::vector<std::string> names;
  for (const auto& s : tasks) names.push_back(std::get<0>(s));
  EXPECT_EQ(std::count(names.begin(), names.end(), "main"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "first"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "second"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "fsum.f32"), 2);
  std::size_t async = 0;
  for (const char* t : {"microthread 1", "microthread 2"})
    for (const auto& s : slices(timeline, "wafer0 PE 0,0", t)) {
      EXPECT_EQ(std::get<0>(s), "fmov.f32");
      ++async;
    }
  EXPECT_EQ(async, 2u);
}

// SystemC's VCD writer stamps the wall-clock time in the header's $date section.
std::string without_vcd_date(std::string text) {
  const auto begin = text.find("$date");
  if (begin == std::string::npos) return text;
  const auto end = text.find("$end", begin);
  if (end == std::string::npos) return text;
  return text.erase(begin, end + 4 - begin);
}

Json without_run_id(const std::string& meta) {
  Json j = Json::parse(meta);
  EXPECT_EQ(j.at("run_id").get<std::string>().size(), 16u);
  j.erase("run_id");
  return j;
}

// Traced runs write identical trace files run to run (but for the VCD's wall-clock $date),
// and tracing changes no statistic.
TEST(TraceCore, TracedRunsAreIdenticalAndLeaveTheStatisticsAlone) {
  test::TempDir tmp;
  const std::string trace = " --trace all --trace-pes 0,0:3,0 --trace-window 3";
  ASSERT_EQ(wafersim(stream_args(tmp.path() / "a") + trace).code, 0);
  ASSERT_EQ(wafersim(stream_args(tmp.path() / "b") + trace).code, 0);
  ASSERT_EQ(wafersim(stream_args(tmp.path() / "plain")).code, 0);
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path() / "a/trace")) {
    const auto name = e.path().filename();
    if (name == "meta.json")  // the same but for the run's id
      EXPECT_EQ(without_run_id(slurp(e.path())), without_run_id(slurp(tmp.path() / "b/trace" / name)));
    else
      EXPECT_EQ(without_vcd_date(slurp(e.path())), without_vcd_date(slurp(tmp.path() / "b/trace" / name))) << name;
    ++files;
  }
  EXPECT_EQ(files, 7u);  // meta, fabric, pe, sram, energy, timeline, vcd
  EXPECT_EQ(slurp(tmp.path() / "a/stats.json"), slurp(tmp.path() / "plain/stats.json"));
  EXPECT_EQ(slurp(tmp.path() / "a/stats.json"), slurp(tmp.path() / "b/stats.json"));
}

// A traffic run has no programs: the PE sections say so.
TEST(TraceCore, RunsWithoutProgramsSayWhy) {
  test::TempDir tmp;
  ASSERT_EQ(wafersim("traffic tiny --pattern uniform --rate 0.01 --warmup 0 --measure 100 --trace windows --json -o " +
                     (tmp.path() / "t").string())
                .code,
            0);
  const Json meta = Json::parse(slurp(tmp.path() / "t/trace/meta.json"));
  EXPECT_FALSE(meta["pe"]["recorded"].get<bool>());
  EXPECT_EQ(meta["pe"]["reason"], "no PE ran a program in this run");
}

// Layer phases from the runtime: a slice per phase (overlaps on numbered tracks) and
// phases.json in start order.
TEST(TraceCore, LayerPhasesGoOnTheTimelineAndIntoPhasesJson) {
  test::TempDir tmp;
  const auto loaded = platforms::load_platform("tiny");
  sim::trace::TraceOptions o;
  o.timeline = true;
  o.windows = true;
  platforms::RunTrace trace(o, tmp.path(), loaded.spec, 100);
  trace.phase(0, "L1 forward", sim::Cycle(40), sim::Cycle(70));
  trace.phase(0, "L0 forward", sim::Cycle(0), sim::Cycle(40), {sim::trace::Arg::num("layer", 0)});
  trace.phase(0, "L0 weights", sim::Cycle(30), sim::Cycle(50));  // overlaps both
  EXPECT_THROW(trace.phase(0, "backwards", sim::Cycle(9), sim::Cycle(8)), std::logic_error);
  trace.finish(sim::Cycle(100));
  const Json phases = Json::parse(slurp(tmp.path() / "trace/phases.json"));
  ASSERT_EQ(phases["phases"].size(), 3u);
  EXPECT_EQ(phases["phases"][0]["name"], "L0 forward");
  EXPECT_EQ(phases["phases"][1]["name"], "L0 weights");
  EXPECT_EQ(phases["phases"][2]["end"], 70);
  const Json timeline = Json::parse(slurp(tmp.path() / "trace/timeline.json"));
  const auto first = slices(timeline, "wafer0 layers", "phases");
  const auto second = slices(timeline, "wafer0 layers", "phases 2");
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[1], std::make_tuple(std::string("L1 forward"), 40u, 30u));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0], std::make_tuple(std::string("L0 weights"), 30u, 20u));
  EXPECT_EQ(Json::parse(slurp(tmp.path() / "trace/meta.json"))["phases"]["count"], 3);
}

}  // namespace
}  // namespace wafersim::trace_core_test

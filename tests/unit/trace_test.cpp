// The trace infrastructure on its own: --trace option parsing, window tables (rows, merging),
// the recorder's window clock (which windows close when, merges, the last short window), the
// Chrome trace-event writer and the chunk-link tracer's byte accounting.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/errors.h"
#include "sim/trace/chrome_trace.h"
#include "sim/trace/recorder.h"
#include "sim/trace/region_grid.h"
#include "sim/trace/trace_options.h"
#include "sim/trace/window_table.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::sim::trace::trace_test {
namespace {

using test::slurp;
using test::TempDir;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TraceOptions, ParsesKindsRectanglesAndColors) {
  TraceOptions o;
  parse_kinds("windows, vcd", o);
  EXPECT_TRUE(o.windows);
  EXPECT_FALSE(o.timeline);
  EXPECT_TRUE(o.vcd);
  parse_kinds("all", o);
  EXPECT_TRUE(o.windows && o.timeline && o.vcd);
  parse_kinds("none", o);
  EXPECT_FALSE(o.any());

  const Rect r = parse_rect("7,3:2,5", "--trace-region");
  EXPECT_EQ(r.x0, 2u);
  EXPECT_EQ(r.y0, 3u);
  EXPECT_EQ(r.x1, 7u);
  EXPECT_EQ(r.y1, 5u);
  EXPECT_EQ(r.size(), 18u);
  EXPECT_EQ(r.str(), "2,3:7,5");
  const auto list = parse_rects("1,1; 2,2:3,3", "--trace-pes");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].str(), "1,1");
  EXPECT_EQ(list[1].size(), 4u);
  EXPECT_EQ(parse_by_color("off", "--trace-colors"), ByColor::Off);
}

TEST(TraceOptions, BadInputNamesTheOptionAndWhatWasExpected) {
  TraceOptions o;
  EXPECT_EQ(error_of([&] { parse_kinds("windows,heat", o); }),
            "--trace 'windows,heat': unknown trace 'heat'; expected a list of windows, timeline, vcd, all, none");
  EXPECT_EQ(error_of([] { parse_rect("3;4", "--trace-region"); }), "--trace-region '3;4': expected X,Y or X0,Y0:X1,Y1");
  EXPECT_EQ(error_of([] { parse_rect("-1,4", "--trace-pes"); }),
            "--trace-pes '-1,4': '-1' is not a coordinate (0 .. 65535); expected X,Y or X0,Y0:X1,Y1");
  EXPECT_EQ(error_of([] {
              check_inside(Rect{0, 0, 8, 2}, 8, 8, "--trace-region");
            }),
            "--trace-region 0,0:8,2: outside the 8 x 8 grid (x 0 .. 7, y 0 .. 7)");
  EXPECT_EQ(error_of([] { check_inside(Rect{0, 0, 7, 7}, 8, 8, "--trace-region"); }), "no error");
  EXPECT_EQ(error_of([] { parse_by_color("yes", "--trace-colors"); }),
            "--trace-colors 'yes': expected auto, on or off");
}

TEST(TraceOptions, AutoWindowGivesAboutAHundredWindows) {
  EXPECT_EQ(auto_window_cycles(0), 1000u);
  EXPECT_EQ(auto_window_cycles(99), 1u);
  EXPECT_EQ(auto_window_cycles(5000), 50u);
  EXPECT_EQ(auto_window_cycles(5001), 100u);  // 50.01 per window rounds up to the next 1-2-5 step
  EXPECT_EQ(auto_window_cycles(1'500'000), 20000u);
}

// The smallest R with ceil(W/R) x ceil(H/R) <= max cells: a WSE-2 fabric in 4096 regions
// needs R = 14 (55 x 72 = 3960); R = 13 would give 59 x 77 = 4543.
TEST(RegionGrid, FitsTheSmallestRegionSize) {
  using sim::trace::RegionGrid;
  const RegionGrid tiny = RegionGrid::fit(Rect{0, 0, 7, 7}, 4096);
  EXPECT_EQ(tiny.size, 1u);
  EXPECT_EQ(tiny.cells(), 64u);
  const RegionGrid wse2 = RegionGrid::fit(Rect{0, 0, 756, 995}, 4096);
  EXPECT_EQ(wse2.size, 14u);
  EXPECT_EQ(wse2.cols, 55u);
  EXPECT_EQ(wse2.rows, 72u);
  EXPECT_EQ(RegionGrid::fit(Rect{0, 0, 756, 995}, 3960).size, 14u);
  EXPECT_EQ(RegionGrid::fit(Rect{0, 0, 756, 995}, 3959).size, 15u);
  // The last column and row of regions are narrower; cells map back to their rectangles.
  EXPECT_EQ(wse2.cell(756, 995), wse2.cells() - 1);
  EXPECT_EQ(wse2.rect(wse2.cells() - 1).str(), "756,994:756,995");
  const RegionGrid off = RegionGrid::fit(Rect{10, 20, 19, 29}, 4);
  EXPECT_EQ(off.size, 5u);
  EXPECT_EQ(off.cell(15, 24), 1u);
  EXPECT_EQ(off.rect(2).str(), "10,25:14,29");
}

WindowTable::Column col(const char* name) { return WindowTable::Column{name, "", "", WindowTable::Merge::Sum}; }

TEST(WindowTable, WritesNonzeroRowsInKeyOrderAndCombinesRepeats) {
  TempDir tmp;
  WindowTable t(tmp.path() / "t.csv", "t", "test", {col("k")},
                {col("n"), WindowTable::Column{"peak", "", "", WindowTable::Merge::Max}});
  auto add = [&](std::uint64_t w, std::uint64_t k, std::uint64_t n, std::uint64_t peak) {
    const std::uint64_t keys[1] = {k}, values[2] = {n, peak};
    t.add(w, keys, values);
  };
  add(0, 5, 1, 2);
  add(0, 3, 0, 0);  // all zero: not written
  add(0, 2, 4, 1);
  add(0, 5, 2, 1);  // same window and key: n adds, peak keeps the larger
  add(2, 1, 7, 7);
  EXPECT_THROW(add(1, 1, 1, 1), std::logic_error);
  t.close();
  EXPECT_EQ(slurp(tmp.path() / "t.csv"), "window,k,n,peak\n0,2,4,1\n0,5,3,2\n2,1,7,7\n");
  EXPECT_EQ(t.rows(), 3u);
}

TEST(WindowTable, MergesWindowsInPairsAndKeepsTheLastOneOpen) {
  TempDir tmp;
  WindowTable t(tmp.path() / "t.csv", "t", "test", {col("k")}, {col("n")});
  auto add = [&](std::uint64_t w, std::uint64_t k, std::uint64_t n) {
    const std::uint64_t keys[1] = {k}, values[1] = {n};
    t.add(w, keys, values);
  };
  add(0, 1, 1);
  add(1, 1, 2);
  add(1, 2, 3);
  add(2, 1, 4);
  add(5, 1, 5);
  t.merge_pairs();  // windows 0,1 -> 0; 2 -> 1; 5 -> 2 (still open)
  add(2, 1, 6);     // joins the open window
  add(3, 2, 1);
  t.close();
  EXPECT_EQ(slurp(tmp.path() / "t.csv"), "window,k,n\n0,1,3\n0,2,3\n1,1,4\n2,1,11\n3,2,1\n");
}

// A producer that records what the recorder asked of it.
struct Probe final : WindowProducer {
  std::vector<std::string> calls;
  void close_window(std::uint64_t i, Cycle start, Cycle end) override {
    calls.push_back("close " + std::to_string(i) + " " + std::to_string(start.count()) + "-" +
                    std::to_string(end.count()));
  }
  void skip_windows(std::uint64_t first, std::uint64_t count) override {
    calls.push_back("skip " + std::to_string(first) + "+" + std::to_string(count));
  }
  void windows_merged() override { calls.push_back("merged"); }
  void finish(std::uint64_t windows) override { calls.push_back("finish " + std::to_string(windows)); }
};

TraceOptions windows_only(std::uint32_t max_windows = 1000) {
  TraceOptions o;
  o.windows = true;
  o.max_windows = max_windows;
  return o;
}

// Windows close before the first tick at or after their end: a tick at cycle 10 closes
// [0, 10) but not [10, 20); one at 9 closes nothing. Idle stretches are skipped in one call.
TEST(Recorder, ClosesAWindowAtTheFirstTickAtOrAfterItsEnd) {
  TempDir tmp;
  Recorder rec(windows_only(), tmp.path(), units::Frequency{1e9}, 10);
  auto& source = rec.add_source();
  Probe p;
  source.add_producer(&p);
  source.before_tick(Cycle(0));
  source.before_tick(Cycle(9));
  EXPECT_TRUE(p.calls.empty());
  source.before_tick(Cycle(10));
  EXPECT_EQ(p.calls, std::vector<std::string>{"close 0 0-10"});
  source.before_tick(Cycle(19));
  source.before_tick(Cycle(57));  // [10, 20) had ticks; [20, 50) none
  EXPECT_EQ(p.calls, (std::vector<std::string>{"close 0 0-10", "close 1 10-20", "skip 2+3"}));
  const auto files = rec.finish(Cycle(63));  // [50, 60) then the short [60, 63)
  EXPECT_EQ(p.calls, (std::vector<std::string>{"close 0 0-10", "close 1 10-20", "skip 2+3", "close 5 50-60",
                                               "close 6 60-63", "finish 7"}));
  EXPECT_EQ(rec.windows(), 7u);
  EXPECT_EQ(files.front(), "meta.json");
  const auto meta = nlohmann::json::parse(slurp(tmp.path() / "meta.json"));
  EXPECT_EQ(meta["format"], "wafersim-trace/1");
  EXPECT_EQ(meta["windows"], 7);
  EXPECT_EQ(meta["window_cycles"], 10);
  EXPECT_EQ(meta["end_cycle"], 63);
}

// With a budget of 4 windows, the 5th window merges them in pairs: K doubles and the
// closed count halves; the merged window that holds `now` stays open.
TEST(Recorder, MergesWindowsWhenTheRunOutgrowsTheBudget) {
  TempDir tmp;
  Recorder rec(windows_only(4), tmp.path(), units::Frequency{1e9}, 10);
  auto& source = rec.add_source();
  Probe p;
  source.add_producer(&p);
  for (std::uint64_t c = 0; c <= 50; ++c) source.before_tick(Cycle(c));
  EXPECT_EQ(p.calls,
            (std::vector<std::string>{"close 0 0-10", "close 1 10-20", "close 2 20-30", "close 3 30-40", "merged"}));
  EXPECT_EQ(rec.window_cycles(), 20u);
  p.calls.clear();
  source.before_tick(Cycle(59));
  EXPECT_TRUE(p.calls.empty());
  source.before_tick(Cycle(75));  // [40, 60) closes; [60, 80) is still open at 75
  EXPECT_EQ(p.calls, std::vector<std::string>{"close 2 40-60"});
  rec.finish(Cycle(75));
  EXPECT_EQ(p.calls, (std::vector<std::string>{"close 2 40-60", "close 3 60-75", "finish 4"}));
  EXPECT_EQ(rec.windows(), 4u);
  EXPECT_EQ(rec.merges(), 1u);
}

TEST(Recorder, LongIdleStretchesMergeWithoutVisitingEveryWindow) {
  TempDir tmp;
  Recorder rec(windows_only(4), tmp.path(), units::Frequency{1e9}, 1);
  auto& source = rec.add_source();
  Probe p;
  source.add_producer(&p);
  source.before_tick(Cycle(0));
  source.before_tick(Cycle(1'000'000'000));
  rec.finish(Cycle(1'000'000'001));
  EXPECT_LE(rec.windows(), 4u);
  EXPECT_EQ(rec.window_cycles(), std::uint64_t{1} << rec.merges());
  EXPECT_LT(p.calls.size(), 100u);
}

// Window times follow the engine's rounding of cycles to picoseconds exactly.
TEST(Recorder, WindowTimesMatchTheEngine) {
  TempDir tmp;
  sim::Engine engine("engine", sim::EngineOptions{units::Frequency{1.1e9}});
  Recorder rec(windows_only(), tmp.path(), units::Frequency{1.1e9}, 7);
  for (std::uint64_t c : {0u, 1u, 7u, 11u, 1000u, 123457u}) {
    EXPECT_EQ(rec.time_of(Cycle(c)).count(), static_cast<std::uint64_t>(engine.time_of(Cycle(c)).value()));
    const Picos t = rec.time_of(Cycle(c));
    EXPECT_EQ(rec.window_at(t), c / 7);
    if (c) {
      EXPECT_EQ(rec.window_at(Picos(t.count() - 1)), (c - 1) / 7);  // one picosecond earlier
    }
  }
}

TEST(ChromeTrace, WritesTraceEventJson) {
  TempDir tmp;
  const auto path = tmp.path() / "t.json";
  {
    ChromeTrace t(path, 5);
    const TrackId a = t.track("MemoryX", "link \"0\"");
    const TrackId b = t.track("MemoryX", "link 1");
    EXPECT_EQ(a.process, b.process);
    EXPECT_NE(a.thread, b.thread);
    t.slice(a, "L0 forward #3", "link", Picos(1'500'000), Picos(2'000'001), {Arg::num("bytes", 4096)});
    t.counter("wafer0 fabric", "wavelets forwarded per cycle", Picos(0), 2.5);
    t.instant(b, "end", Picos(7));
    t.slice(b, "x", "c", Picos(0), Picos(1));
    t.slice(b, "y", "c", Picos(1), Picos(2));
    t.slice(b, "dropped", "c", Picos(2), Picos(3));  // over the budget of 5
    EXPECT_EQ(t.events(), 5u);
    EXPECT_EQ(t.dropped(), 1u);
    EXPECT_THROW(t.slice(a, "backwards", "c", Picos(5), Picos(4)), std::logic_error);
    t.close();
  }
  const auto j = nlohmann::json::parse(slurp(path));
  EXPECT_FALSE(j.contains("displayTimeUnit"));
  EXPECT_EQ(j["otherData"]["dropped_events"], 1);
  const auto& ev = j["traceEvents"];
  int slices = 0;
  for (const auto& e : ev) {
    if (e["ph"] == "X" && e["name"] == "L0 forward #3") {
      ++slices;
      EXPECT_EQ(e["ts"].get<double>(), 1.5);
      EXPECT_EQ(e["dur"].get<double>(), 0.5);  // 2.000001 us ends at 2.000 us
      EXPECT_EQ(e["args"]["bytes"], 4096);
    }
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == 1) {
      EXPECT_EQ(e["args"]["name"], "link \"0\"");
    }
  }
  EXPECT_EQ(slices, 1);
  EXPECT_EQ(micros(Picos(123'456'789)), "123.457");
  EXPECT_EQ(micros(Picos(123'456'499)), "123.456");
  EXPECT_EQ(micros(Picos(499)), "0.000");
}

}  // namespace
}  // namespace wafersim::sim::trace::trace_test

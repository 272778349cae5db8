// Cerebras' single-tile matvec benchmark (csl-examples benchmarks/single-tile-matvec),
// reproduced: every PE computes its own N x N FP32 y = A x from SRAM for N = 10 .. 100.
// Our program follows the original's layout: A column-major with the column length padded
// to a multiple of 4 (16 bytes) and offset by one element, x and y 16-byte aligned, one
// fmac per column with x[j] as the scalar. The table reports cycles per PE (timed with the
// cycle counter around the column loop, as the original), FLOP/cycle (2N^2 - N per PE),
// the effective SRAM bandwidth (12N^2 + 4N bytes per PE) against the bound of the configured
// ports, and the figures scaled to a 750 x 994 grid at 0.85 GHz as the original does.
// Every PE's y is checked bit for bit against the host's sequential fmaf.
//
//   bench_matvec [benchmark flags]                       one benchmark per N, figures as counters
//   bench_matvec --table [--csv FILE] [--width W --height H]   the table of docs/pe-programs.md (Markdown)

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <systemc>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "hw/core/core_array.h"
#include "hw/isa/assembler.h"
#include "platforms/platform_spec.h"
#include "tests/support/manual_engine.h"

namespace {

using wafersim::hw::PeCoord;

struct Layout {
  unsigned n, pn;
  std::uint32_t a, x, y, timer;
};

Layout layout(unsigned n) {
  Layout l{n, (n + 3) / 4 * 4, 0, 0, 0, 0};
  auto align16 = [](std::uint32_t v) { return (v + 15) / 16 * 16; };
  l.a = 0;
  l.x = align16((n * l.pn + 1) * 4);
  l.y = align16(l.x + n * 4);
  l.timer = align16(l.y + l.pn * 4);
  return l;
}

std::string program(const Layout& l, unsigned width, unsigned height) {
  return fmt::format(R"(
.equ N, {n}
.equ PN, {pn}
.pe 0..{w}, 0..{h}
.dsd a, mem, f32, base={a}+4, len=PN     ; column j of A, one element past the start
.dsd y, mem, f32, base={y}, len=PN
.task main, 0
.entry main
main:
  tsc r10
  mov r1, 0
  mov r2, {x}
col:
  ld r3, [r2]                            ; x[j]
  fmac.f32 y, y, a, r3                   ; y += A[:, j] x[j]
  dsd.add a, PN
  add r2, r2, 4
  add r1, r1, 1
  blt r1, N, col
  tsc r11
  sub r12, r11, r10
  st [{t}], r12
  ret
)",
                     fmt::arg("n", l.n), fmt::arg("pn", l.pn), fmt::arg("w", width - 1), fmt::arg("h", height - 1),
                     fmt::arg("a", l.a), fmt::arg("x", l.x), fmt::arg("y", l.y), fmt::arg("t", l.timer));
}

struct Result {
  unsigned n = 0;
  std::uint64_t min_cycles = 0, max_cycles = 0;  // timed region per PE
  std::uint64_t bank_stalls = 0;                 // per PE (max)
  std::uint64_t sram_port_accesses = 0;          // per PE (max)
  std::uint64_t core_ticks = 0;
  std::uint64_t busy_cycles = 0;  // active PE-cycles, all PEs
  double run_cpu_s = 0;           // CPU seconds of the simulation alone (no setup, no checks)
  unsigned pes = 0;
};

Result run(unsigned n, unsigned width, unsigned height) {
  auto spec = wafersim::platforms::load_platform(
                  "tiny", {fmt::format("wafer.width={}", width), fmt::format("wafer.height={}", height),
                           fmt::format("fabric.edge_io_channels={}", height)})
                  .spec;
  wafersim::hw::CoreArray cores("cores", spec.wafer, {spec.fabric.colors, true});
  const Layout l = layout(n);
  for (const auto& p : wafersim::hw::isa::assemble(program(l, width, height), "matvec.s")) cores.load(p);

  // Host data, the same on every PE (as the original): A and x uniform in [0, 1).
  std::mt19937 rng(2024 + n);
  auto uniform = [&] { return static_cast<float>(rng() >> 8) * 0x1p-24f; };
  std::vector<float> A(n * n), x(n), y(n, 0.0f);
  for (auto& v : A) v = uniform();
  for (auto& v : x) v = uniform();
  std::vector<float> a_array(n * l.pn + 1, 0.0f);
  for (unsigned j = 0; j < n; ++j)
    for (unsigned i = 0; i < n; ++i) a_array[1 + j * l.pn + i] = A[i * n + j];
  for (unsigned i = 0; i < n; ++i)
    for (unsigned j = 0; j < n; ++j) y[i] = std::fmaf(A[i * n + j], x[j], y[i]);
  for (unsigned py = 0; py < height; ++py)
    for (unsigned px = 0; px < width; ++px) {
      auto& sram = cores.core(PeCoord{static_cast<std::uint16_t>(px), static_cast<std::uint16_t>(py)}).sram();
      sram.write(l.a, a_array.data(), static_cast<std::uint32_t>(a_array.size() * 4));
      sram.write(l.x, x.data(), n * 4);
    }

  wafersim::test::ManualEngine engine;
  engine.add(&cores);
  timespec t0{}, t1{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
  engine.run([&] { return cores.next_wake().is_never(); }, 100'000'000);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
  cores.check_finished();

  Result r;
  r.n = n;
  r.pes = width * height;
  r.min_cycles = ~0ull;
  for (unsigned py = 0; py < height; ++py)
    for (unsigned px = 0; px < width; ++px) {
      const auto* c = cores.find(PeCoord{static_cast<std::uint16_t>(px), static_cast<std::uint16_t>(py)});
      const std::uint64_t cycles = c->sram().load(l.timer, 4);
      r.min_cycles = std::min(r.min_cycles, cycles);
      r.max_cycles = std::max(r.max_cycles, cycles);
      const auto& k = c->counters();
      r.bank_stalls = std::max(r.bank_stalls, k.stall[static_cast<int>(wafersim::hw::Stall::SramBank)]);
      r.sram_port_accesses = std::max(r.sram_port_accesses, k.sram_reads + k.sram_writes);
      for (unsigned i = 0; i < n; ++i) {
        std::uint32_t got = c->sram().load(l.y + 4 * i, 4), want;
        std::memcpy(&want, &y[i], 4);
        if (got != want)
          throw std::runtime_error(
              fmt::format("N={}: PE ({}, {}) y[{}] = {:#x}, host fmaf gives {:#x}", n, px, py, i, got, want));
      }
    }
  r.core_ticks = cores.core_ticks();
  r.busy_cycles = cores.total(&wafersim::hw::CoreCounters::busy_cycles);
  r.run_cpu_s = static_cast<double>(t1.tv_sec - t0.tv_sec) + static_cast<double>(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  return r;
}

const unsigned kSizes[] = {10, 25, 50, 75, 100};
unsigned g_width = 4, g_height = 4;

void BM_Matvec(benchmark::State& state) {
  const auto n = static_cast<unsigned>(state.range(0));
  Result r;
  for (auto _ : state) r = run(n, g_width, g_height);
  const double cycles = static_cast<double>(r.max_cycles);
  const double flop = 2.0 * n * n - n, bytes = 12.0 * n * n + 4.0 * n;
  state.counters["cycles_per_pe"] = cycles;
  state.counters["flop_per_cycle"] = flop / cycles;
  state.counters["sram_B_per_cycle"] = bytes / cycles;
  state.counters["scaled_TFLOPs"] = 750.0 * 994.0 * flop / (cycles / 0.85e9) / 1e12;
  // The simulation alone (CPU time, no setup or checks): core ticks and active PE-cycles per second.
  state.counters["sim_core_ticks_per_s"] = static_cast<double>(r.core_ticks) / r.run_cpu_s;
  state.counters["sim_active_pe_cycles_per_s"] = static_cast<double>(r.busy_cycles) / r.run_cpu_s;
  state.counters["core_cycles_per_s"] =
      benchmark::Counter(static_cast<double>(r.core_ticks), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Matvec)->Arg(10)->Arg(25)->Arg(50)->Arg(75)->Arg(100)->Unit(benchmark::kMillisecond);

void print_table(std::ostream& out, std::ostream* csv) {
  // The port bound of the configured SRAM: (reads + writes) x port width per cycle.
  auto spec = wafersim::platforms::load_platform("tiny").spec;
  const double bound = static_cast<double>(spec.wafer.pe.sram_bytes_per_cycle());
  const double pes = 750.0 * 994.0, clock = 0.85e9;
  out << fmt::format(
      "Single-tile matvec, FP32, every PE computes its own y = A x ({} x {} PEs simulated, "
      "identical cycles on every PE; y checked bit for bit against host fmaf)\n\n",
      g_width, g_height);
  out << "| N | cycles per PE | FLOP per PE | FLOP/cycle | bank-conflict cycles | SRAM bytes per PE | B/cycle | of "
         "port "
         "bound | 750 x 994 at 0.85 GHz: TFLOP/s | absolute PB/s | relative PB/s |\n";
  out << "|---|---|---|---|---|---|---|---|---|---|---|\n";
  if (csv)
    *csv << "n,cycles_per_pe,flop_per_pe,flop_per_cycle,bank_conflict_cycles,sram_bytes_per_pe,bytes_per_cycle,"
            "port_bound_bytes_per_cycle,scaled_tflops,scaled_absolute_pbps,scaled_relative_pbps\n";
  for (unsigned n : kSizes) {
    const Result r = run(n, g_width, g_height);
    if (r.min_cycles != r.max_cycles) throw std::runtime_error(fmt::format("N={}: PEs disagree on cycles", n));
    const double cycles = static_cast<double>(r.max_cycles);
    const double flop = 2.0 * n * n - n;
    const double absolute = 12.0 * n * n + 4.0 * n, relative = 4.0 * n * n + 8.0 * n;
    const double secs = cycles / clock;
    out << fmt::format("| {} | {} | {:.0f} | {:.3f} | {} | {:.0f} | {:.2f} | {:.1f}% | {:.1f} | {:.2f} | {:.2f} |\n", n,
                       r.max_cycles, flop, flop / cycles, r.bank_stalls, absolute, absolute / cycles,
                       100.0 * absolute / cycles / bound, pes * flop / secs / 1e12, pes * absolute / secs / 1e15,
                       pes * relative / secs / 1e15);
    if (csv)
      *csv << fmt::format("{},{},{:.0f},{:.6f},{},{:.0f},{:.6f},{:.0f},{:.6f},{:.6f},{:.6f}\n", n, r.max_cycles, flop,
                          flop / cycles, r.bank_stalls, absolute, absolute / cycles, bound, pes * flop / secs / 1e12,
                          pes * absolute / secs / 1e15, pes * relative / secs / 1e15);
  }
  out << fmt::format(
      "\nPort bound: {:.0f} B/cycle per PE (2 x 64-bit reads + 1 x 64-bit write); at 0.85 GHz on "
      "750 x 994 PEs that is {:.2f} PB/s. Peak FP32: {} FMAC/cycle = {} FLOP/cycle per PE.\n",
      bound, bound * clock * pes / 1e15, spec.wafer.pe.simd_lanes.fp32, 2 * spec.wafer.pe.simd_lanes.fp32);
}

}  // namespace

int sc_main(int argc, char* argv[]) {
  bool table = false;
  std::string csv_path;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--table") {
      table = true;
    } else if (a == "--csv" && i + 1 < argc) {
      csv_path = argv[++i];
    } else if (a == "--width" && i + 1 < argc) {
      g_width = static_cast<unsigned>(std::stoul(argv[++i]));
    } else if (a == "--height" && i + 1 < argc) {
      g_height = static_cast<unsigned>(std::stoul(argv[++i]));
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (table) {
    std::ofstream csv;
    if (!csv_path.empty()) csv.open(csv_path);
    print_table(std::cout, csv_path.empty() ? nullptr : &csv);
    return 0;
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}

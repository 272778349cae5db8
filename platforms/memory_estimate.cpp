#include "platforms/memory_estimate.h"

#include <fmt/format.h>

#include <fstream>
#include <string>

#include "sim/errors.h"

namespace wafersim::platforms {
namespace {

// Fitted to the peak resident memory of idle runs and of uniform traffic on 8 x 8 to 256 x 256
// wafers (docs/reliability.md has the table and the commands).
constexpr std::uint64_t kBaseBytes = 13ull << 20;       // the executable, SystemC, the statistics tree
constexpr std::uint64_t kMeshBytesPerRouter = 100;      // router queues, links, the lanes' state
constexpr std::uint64_t kCoreBytesPerPe = 160;          // a core without its SRAM pages
constexpr std::uint64_t kTrafficBytesPerRouter = 4500;  // a traffic source, its sink, packets in flight
// A defective wafer (fabric/defects): the link-delay table its mesh keeps (4 links x 2 B a
// router, every wafer) and, while a wafer is assembled, its remap's position of every logical
// core (4 B).
constexpr std::uint64_t kDelayBytesPerRouter = 8;
constexpr std::uint64_t kRemapBytesPerPe = 4;

std::uint64_t read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return 0;
  try {
    return std::stoull(word);
  } catch (const std::exception&) {
    return 0;
  }
}

std::uint64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::uint64_t value = 0;
  while (in >> key >> value >> unit)
    if (key == "MemAvailable:") return value * 1024;
  return 0;
}

}  // namespace

std::string memory_text(std::uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= (1ull << 30)) return fmt::format("{:.1f} GiB", b / (1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MiB", b / (1ull << 20));
  return fmt::format("{:.0f} KiB", b / 1024);
}

MemoryEstimate estimate_memory(const PlatformSpec& spec, const Workload& workload) {
  const std::uint64_t pes = spec.wafer.pe_count();  // at most 2^32: no product below overflows
  const std::uint64_t wafers = workload.wafers ? workload.wafers : 1;
  const std::uint64_t mesh = wafers * pes * kMeshBytesPerRouter;
  const std::uint64_t cores = wafers * pes * kCoreBytesPerPe;
  const std::uint64_t traffic = workload.synthetic_traffic ? wafers * pes * kTrafficBytesPerRouter : 0;
  const std::uint64_t defects = spec.defects.any() ? wafers * pes * kDelayBytesPerRouter + pes * kRemapBytesPerPe : 0;
  MemoryEstimate e;
  e.bytes = kBaseBytes + mesh + cores + traffic + defects;
  e.breakdown = fmt::format("{}{} x {} PEs: mesh {}, cores {}{}{}, base {}",
                            wafers > 1 ? fmt::format("{} wafers of ", wafers) : "", spec.wafer.width, spec.wafer.height,
                            memory_text(mesh), memory_text(cores), traffic ? ", traffic " + memory_text(traffic) : "",
                            defects ? ", defects " + memory_text(defects) : "", memory_text(kBaseBytes));
  return e;
}

std::uint64_t available_memory() {
  std::uint64_t avail = mem_available();
  const std::uint64_t cgroup = read_number("/sys/fs/cgroup/memory.max");
  if (cgroup && (!avail || cgroup < avail)) avail = cgroup;
  return avail;
}

void check_memory(const MemoryEstimate& estimate, std::uint64_t max_memory) {
  if (max_memory && estimate.bytes > max_memory)
    throw sim::InputError(
        fmt::format("the run does not fit: it needs about {} of host memory ({}), more than "
                    "--max-memory {}; use a smaller wafer or a larger limit",
                    memory_text(estimate.bytes), estimate.breakdown, memory_text(max_memory)));
  const std::uint64_t avail = available_memory();
  if (avail && estimate.bytes > avail)
    throw sim::InputError(
        fmt::format("the run does not fit: it needs about {} of host memory ({}), more than the "
                    "{} this machine has available; use a smaller wafer",
                    memory_text(estimate.bytes), estimate.breakdown, memory_text(avail)));
}

}  // namespace wafersim::platforms

// process_transport() of a build with WAFERSIM_MPI: an MPI rank per process when an MPI
// launcher started it (Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE; srun with PMI sets
// PMI_SIZE or PMIX_RANK), one process otherwise (MPI is not initialised at all then).
// Only the calling thread uses MPI (MPI_THREAD_FUNNELED): the wafers' threads never do.

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "sim/parallel/transport.h"

namespace wafersim::sim::parallel {
namespace {

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

class MpiTransport final : public Transport {
 public:
  MpiTransport() {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      throw std::runtime_error("MPI_Init_thread failed");
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rank_ = static_cast<unsigned>(rank);
    ranks_ = static_cast<unsigned>(size);
  }
  ~MpiTransport() override { MPI_Finalize(); }
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  [[nodiscard]] unsigned rank() const override { return rank_; }
  [[nodiscard]] unsigned ranks() const override { return ranks_; }

  void send(unsigned to, const std::string& bytes) override {
    check(to);
    const std::uint64_t t0 = now_ns();
    // Large messages in pieces of at most 1 GiB (an MPI count is an int).
    const std::uint64_t size = bytes.size();
    MPI_Send(&size, 1, MPI_UINT64_T, static_cast<int>(to), kTag, MPI_COMM_WORLD);
    for (std::uint64_t at = 0; at < size; at += kPiece)
      MPI_Send(bytes.data() + at, static_cast<int>(std::min<std::uint64_t>(kPiece, size - at)), MPI_BYTE,
               static_cast<int>(to), kTag, MPI_COMM_WORLD);
    time_.wait_ns += now_ns() - t0;
  }

  std::string receive(unsigned from) override {
    check(from);
    const std::uint64_t t0 = now_ns();
    wait_for(from);
    std::uint64_t size = 0;
    MPI_Recv(&size, 1, MPI_UINT64_T, static_cast<int>(from), kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    std::string bytes(size, '\0');
    for (std::uint64_t at = 0; at < size; at += kPiece)
      MPI_Recv(bytes.data() + at, static_cast<int>(std::min<std::uint64_t>(kPiece, size - at)), MPI_BYTE,
               static_cast<int>(from), kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    time_.wait_ns += now_ns() - t0;
    ++time_.messages;
    return bytes;
  }

  void abort(int exit_code) override {
    if (ranks_ > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
  }

  [[nodiscard]] RankTime time() const override { return time_; }

 private:
  static constexpr int kTag = 34;
  static constexpr std::uint64_t kPiece = std::uint64_t{1} << 30;
  // Waits for a message from `from` without holding a core: MPI's own blocking receive polls
  // without pause, which takes the core from the ranks that compute when the run has more
  // ranks (and threads) than the host has cores. Polls, then yields, then sleeps 20 us.
  static void wait_for(unsigned from) {
    for (unsigned i = 0;; ++i) {
      int arrived = 0;
      MPI_Iprobe(static_cast<int>(from), kTag, MPI_COMM_WORLD, &arrived, MPI_STATUS_IGNORE);
      if (arrived) return;
      if (i < 64) continue;
      if (i < 256)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  void check(unsigned other) const {
    if (other >= ranks_ || other == rank_) throw std::logic_error("MPI transport: no such other rank");
  }
  unsigned rank_ = 0, ranks_ = 1;
  RankTime time_;
};

}  // namespace

std::unique_ptr<Transport> process_transport() {
  if (!launched_by_mpi()) return std::make_unique<SingleProcess>();
  return std::make_unique<MpiTransport>();
}

}  // namespace wafersim::sim::parallel

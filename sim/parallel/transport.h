#pragma once
// The seam between a run's processes: a co-simulated cluster whose wafers are spread over
// ranks (processes, possibly on other machines) exchanges byte messages through a Transport.
// One process is the in-process implementation (SingleProcess: one rank, nothing crosses);
// an MPI launch (mpirun, srun) gives one rank per process (sim/parallel/mpi_transport.cpp,
// built with WAFERSIM_MPI). Whatever crosses is the same for both: the run's results do not
// depend on the number of ranks (docs/parallel.md).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace wafersim::sim::parallel {

// Time a rank spent, in nanoseconds: exchanging (sending and waiting for messages) and the rest.
struct RankTime {
  std::uint64_t wait_ns = 0;
  std::uint64_t messages = 0;  // received
};

class Transport {
 public:
  virtual ~Transport() = default;
  [[nodiscard]] virtual unsigned rank() const = 0;
  [[nodiscard]] virtual unsigned ranks() const = 0;
  // Sends `bytes` to rank `to` (!= rank()); returns once `bytes` may be reused. Messages from
  // one rank to another arrive in the order they were sent.
  virtual void send(unsigned to, const std::string& bytes) = 0;
  // The next message from rank `from` (!= rank()), waiting for it.
  virtual std::string receive(unsigned from) = 0;
  // Ends every rank's process with `exit_code` after this rank's failure (the others may be
  // waiting for a message that will not come). Returns only with one rank.
  virtual void abort(int exit_code) = 0;
  [[nodiscard]] virtual RankTime time() const = 0;
};

// One process, one rank: nothing to send or receive.
class SingleProcess final : public Transport {
 public:
  [[nodiscard]] unsigned rank() const override { return 0; }
  [[nodiscard]] unsigned ranks() const override { return 1; }
  void send(unsigned to, const std::string& bytes) override;
  std::string receive(unsigned from) override;
  void abort(int /*exit_code*/) override {}
  [[nodiscard]] RankTime time() const override { return {}; }
};

// The transport of this process: an MPI rank when the build has WAFERSIM_MPI and the process
// was started by an MPI launcher (mpirun, or srun with PMI), else SingleProcess. Call it once;
// MPI is finalised when the returned object goes.
std::unique_ptr<Transport> process_transport();

// Items [begin, end) of `items` split into `ranks` contiguous groups, for rank `rank`: group
// sizes differ by at most one, the larger ones first. Needs 1 <= ranks and rank < ranks.
struct ItemRange {
  std::size_t begin = 0, end = 0;
  [[nodiscard]] bool contains(std::size_t i) const { return i >= begin && i < end; }
  [[nodiscard]] std::size_t size() const { return end - begin; }
};
[[nodiscard]] ItemRange rank_items(std::size_t items, unsigned ranks, unsigned rank);
// The rank whose group holds item `i`.
[[nodiscard]] unsigned rank_of_item(std::size_t items, unsigned ranks, std::size_t i);

}  // namespace wafersim::sim::parallel

#pragma once
// A VCD waveform file written by SystemC's sc_trace (picosecond resolution): the
// variables are plain integers the probes update during the run.

#include <systemc>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace wafersim::sim::trace {

// Contract: variables are added before the simulation starts (SystemC's rule) and live
// until close(); SystemC records their values at the end of every time step, except the
// step in which sc_stop() ended the run: close(end) appends the values at `end` when the file
// stops earlier.
class VcdFile {
 public:
  // `path` ends in ".vcd".
  explicit VcdFile(const std::filesystem::path& path);
  ~VcdFile();
  VcdFile(const VcdFile&) = delete;
  VcdFile& operator=(const VcdFile&) = delete;

  // `name` uses '.' between scopes (wafer0.router_3_4.east_out).
  void add(const std::uint32_t& variable, const std::string& name, int bits);
  [[nodiscard]] std::uint32_t variables() const { return variables_; }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  // Closes the file; `end` is the time of the last simulated step (0: nothing to append).
  void close(std::uint64_t end_ps = 0);

 private:
  struct Variable {
    const std::uint32_t* value;
    std::string name;
    int bits;
  };
  void append_final(std::uint64_t end_ps) const;

  std::filesystem::path path_;
  sc_core::sc_trace_file* file_ = nullptr;
  std::uint32_t variables_ = 0;
  std::vector<Variable> vars_;
};

}  // namespace wafersim::sim::trace

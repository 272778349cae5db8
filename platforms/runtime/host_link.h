#pragma once
// The host's TLM-2.0 initiator into a wafer's host socket: loads inputs (timed, b_transport)
// and reads results back for checking (untimed, transport_dbg).

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include <cstdint>
#include <vector>

#include "hw/tlm/address_map.h"

namespace wafersim::platforms::runtime {

class HostLink : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<HostLink> socket{"socket"};

  HostLink(const sc_core::sc_module_name& name, const hw::AddressMap& map) : sc_core::sc_module(name), map_(map) {}

  // Timed write of `bytes` at a PE's SRAM offset; the access time adds to delay().
  void write(hw::PeCoord pe, std::uint32_t offset, const std::vector<std::uint8_t>& bytes);
  // Untimed read (transport_dbg).
  std::vector<std::uint8_t> read(hw::PeCoord pe, std::uint32_t offset, std::uint32_t bytes);
  // Host time spent in timed accesses so far.
  [[nodiscard]] const sc_core::sc_time& delay() const { return delay_; }
  [[nodiscard]] std::uint64_t bytes_written() const { return written_; }

 private:
  const hw::AddressMap& map_;
  sc_core::sc_time delay_ = sc_core::SC_ZERO_TIME;
  std::uint64_t written_ = 0;
};

}  // namespace wafersim::platforms::runtime

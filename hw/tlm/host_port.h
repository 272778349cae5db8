#pragma once
// The wafer's single TLM-2.0 target socket: a host initiator reaches the SRAM of every PE
// (and its control registers) through one address map, without a socket per PE.

#include <tlm_utils/simple_target_socket.h>
#include <systemc>
#include <tlm>

#include <cstdint>
#include <string>

#include "hw/core/core_array.h"
#include "hw/tlm/address_map.h"
#include "sim/engine/engine.h"

namespace wafersim::hw {

// Contract:
// - b_transport (timed): reads and writes within one PE's SRAM; the delay grows by
//   (1 + ceil(bytes / B)) cycles, B = read_ports (or write_ports) x port width, the SRAM side
//   of a host access (the path across the fabric is not part of this socket). Writes to the
//   control block activate tasks (effective the cycle after the access ends).
// - transport_dbg (untimed): the same accesses, no timing; reading untouched SRAM allocates nothing.
// - DMI: granted per 4 KiB page of one PE's SRAM, read and write, with a latency of one
//   cycle per access.
// - An access beyond a PE's SRAM (or crossing into the next window), beyond the last PE,
//   with byte enables or a streaming width is refused with TLM_ADDRESS_ERROR_RESPONSE (or the
//   matching error response); last_error() names the PE and the address. Nothing wraps.
class HostPort : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket_optional<HostPort> socket;  // may stay unbound

  HostPort(const sc_core::sc_module_name& name, CoreArray& cores, const sim::Engine& engine);

  [[nodiscard]] const AddressMap& map() const { return map_; }
  [[nodiscard]] const std::string& last_error() const { return last_error_; }

 private:
  void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
  unsigned transport_dbg(tlm::tlm_generic_payload& p);
  bool get_direct_mem_ptr(tlm::tlm_generic_payload& p, tlm::tlm_dmi& dmi);
  // Performs the access; returns the response status and sets last_error_ on failure.
  tlm::tlm_response_status access(tlm::tlm_generic_payload& p, bool debug, sim::Cycle effective);
  bool refuse(const std::string& why);

  CoreArray& cores_;
  const sim::Engine& engine_;
  AddressMap map_;
  std::string last_error_;
};

}  // namespace wafersim::hw

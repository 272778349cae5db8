#include "platforms/runtime/host_link.h"

#include <fmt/format.h>

#include "sim/errors.h"

namespace wafersim::platforms::runtime {

void HostLink::write(hw::PeCoord pe, std::uint32_t offset, const std::vector<std::uint8_t>& bytes) {
  if (bytes.empty()) return;
  std::vector<std::uint8_t> data = bytes;
  tlm::tlm_generic_payload p;
  p.set_command(tlm::TLM_WRITE_COMMAND);
  p.set_address(map_.address(pe, offset));
  p.set_data_ptr(data.data());
  p.set_data_length(static_cast<unsigned>(data.size()));
  p.set_streaming_width(static_cast<unsigned>(data.size()));
  p.set_byte_enable_ptr(nullptr);
  p.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  socket->b_transport(p, delay_);
  if (p.is_response_error())
    throw sim::SimulationError(fmt::format("host write to PE ({}, {}) offset {:#x} ({} bytes) failed: {}", pe.x, pe.y,
                                           offset, data.size(), p.get_response_string()));
  written_ += data.size();
}

std::vector<std::uint8_t> HostLink::read(hw::PeCoord pe, std::uint32_t offset, std::uint32_t bytes) {
  std::vector<std::uint8_t> data(bytes);
  if (bytes == 0) return data;
  tlm::tlm_generic_payload p;
  p.set_command(tlm::TLM_READ_COMMAND);
  p.set_address(map_.address(pe, offset));
  p.set_data_ptr(data.data());
  p.set_data_length(bytes);
  p.set_streaming_width(bytes);
  p.set_byte_enable_ptr(nullptr);
  const unsigned n = socket->transport_dbg(p);
  if (n != bytes)
    throw sim::SimulationError(
        fmt::format("host read of PE ({}, {}) offset {:#x} ({} bytes) failed", pe.x, pe.y, offset, bytes));
  return data;
}

}  // namespace wafersim::platforms::runtime

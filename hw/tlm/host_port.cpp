#include "hw/tlm/host_port.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/errors.h"
#include "sim/units/quantity.h"

namespace wafersim::hw {
using sim::Cycle;

HostPort::HostPort(const sc_core::sc_module_name& name, CoreArray& cores, const sim::Engine& engine)
    : sc_core::sc_module(name),
      socket("socket"),
      cores_(cores),
      engine_(engine),
      map_(cores.width(), cores.height(), cores.params().sram_bytes) {
  socket.register_b_transport(this, &HostPort::b_transport);
  socket.register_transport_dbg(this, &HostPort::transport_dbg);
  socket.register_get_direct_mem_ptr(this, &HostPort::get_direct_mem_ptr);
}

bool HostPort::refuse(const std::string& why) {
  last_error_ = why;
  return false;
}

tlm::tlm_response_status HostPort::access(tlm::tlm_generic_payload& p, bool debug, Cycle effective) {
  const std::uint64_t addr = p.get_address();
  const std::uint32_t len = p.get_data_length();
  if (p.get_byte_enable_ptr()) {
    last_error_ = fmt::format("address {:#x}: byte enables are not supported", addr);
    return tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE;
  }
  if (p.get_streaming_width() < len) {
    last_error_ = fmt::format("address {:#x}: streaming (width {} < length {}) is not supported", addr,
                              p.get_streaming_width(), len);
    return tlm::TLM_BURST_ERROR_RESPONSE;
  }
  const auto d = map_.decode(addr);
  if (!d) {
    last_error_ = fmt::format("address {:#x} is beyond the last PE of the {} x {} wafer (map size {:#x})", addr,
                              cores_.width(), cores_.height(), map_.size());
    return tlm::TLM_ADDRESS_ERROR_RESPONSE;
  }
  const PeCoord pe = d->pe;
  const std::uint64_t off = d->offset;
  unsigned char* data = p.get_data_ptr();
  if (off >= map_.control_base()) {
    const std::uint64_t reg = off - map_.control_base();
    if (len != 4 || reg % 4) {
      last_error_ = fmt::format("PE ({}, {}): control register access at address {:#x} must be one aligned 32-bit word",
                                pe.x, pe.y, addr);
      return tlm::TLM_ADDRESS_ERROR_RESPONSE;
    }
    std::uint32_t value = 0;
    if (p.is_write()) {
      value = std::uint32_t{data[0]} | std::uint32_t{data[1]} << 8 | std::uint32_t{data[2]} << 16 |
              std::uint32_t{data[3]} << 24;
      if (reg != AddressMap::kActivate) {
        last_error_ = fmt::format("PE ({}, {}): control register at address {:#x} is read-only", pe.x, pe.y, addr);
        return tlm::TLM_ADDRESS_ERROR_RESPONSE;
      }
      try {
        cores_.activate(pe, static_cast<std::uint8_t>(value), effective);
      } catch (const sim::Error& e) {
        last_error_ = e.what();
        return tlm::TLM_GENERIC_ERROR_RESPONSE;
      }
      return tlm::TLM_OK_RESPONSE;
    }
    const Core* c = cores_.find(pe);
    const std::uint64_t now = engine_.first_cycle_at_or_after(sc_core::sc_time_stamp()).count();
    switch (reg) {
      case AddressMap::kStatus:
        value = (c && c->busy() ? 1u : 0u) | (c && c->loaded() ? 2u : 0u);
        break;
      case AddressMap::kCycleLo:
        value = static_cast<std::uint32_t>(now);
        break;
      case AddressMap::kCycleHi:
        value = static_cast<std::uint32_t>(now >> 32);
        break;
      default:
        value = 0;
        break;
    }
    for (int b = 0; b < 4; ++b) data[b] = static_cast<unsigned char>(value >> (8 * b));
    return tlm::TLM_OK_RESPONSE;
  }
  if (off + len > map_.sram_bytes()) {
    last_error_ = fmt::format("PE ({}, {}): address {:#x} (offset {:#x}, {} bytes) is beyond its {} SRAM", pe.x, pe.y,
                              addr, off, len, units::format(cores_.params().pe.sram.size));
    return tlm::TLM_ADDRESS_ERROR_RESPONSE;
  }
  const auto o = static_cast<std::uint32_t>(off);
  if (p.is_read()) {
    if (const Core* c = cores_.find(pe))
      c->sram().read(o, data, len);
    else
      std::fill(data, data + len, 0);
  } else if (p.is_write()) {
    cores_.core(pe).sram().write(o, data, len);
  }
  if (!debug) p.set_dmi_allowed(true);
  return tlm::TLM_OK_RESPONSE;
}

void HostPort::b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  const auto& sram = cores_.params().pe.sram;
  const std::uint64_t ports = p.is_write() ? sram.write_ports : sram.read_ports;
  const std::uint64_t per_cycle = ports * (sram.port_width.bits / 8);
  const std::uint64_t cycles = 1 + (p.get_data_length() + per_cycle - 1) / per_cycle;
  delay += engine_.time_of(Cycle(cycles));
  const Cycle effective = engine_.first_cycle_at_or_after(sc_core::sc_time_stamp() + delay) + Cycle(1);
  p.set_response_status(access(p, false, effective));
}

unsigned HostPort::transport_dbg(tlm::tlm_generic_payload& p) {
  const Cycle effective = engine_.first_cycle_at_or_after(sc_core::sc_time_stamp()) + Cycle(1);
  const auto status = access(p, true, effective);
  p.set_response_status(status);
  return status == tlm::TLM_OK_RESPONSE ? p.get_data_length() : 0;
}

bool HostPort::get_direct_mem_ptr(tlm::tlm_generic_payload& p, tlm::tlm_dmi& dmi) {
  const auto d = map_.decode(p.get_address());
  if (!d) return refuse(fmt::format("DMI: address {:#x} is beyond the last PE", p.get_address()));
  if (d->offset >= map_.sram_bytes())
    return refuse(fmt::format("DMI: PE ({}, {}): address {:#x} is not in its SRAM", d->pe.x, d->pe.y, p.get_address()));
  std::uint32_t base = 0;
  unsigned char* page = cores_.core(d->pe).sram().page(static_cast<std::uint32_t>(d->offset), &base);
  const std::uint64_t bytes = std::min<std::uint64_t>(Sram::kPageBytes, map_.sram_bytes() - base);
  dmi.set_dmi_ptr(page);
  dmi.set_start_address(map_.address(d->pe, base));
  dmi.set_end_address(map_.address(d->pe, base) + bytes - 1);
  dmi.set_granted_access(tlm::tlm_dmi::DMI_ACCESS_READ_WRITE);
  dmi.set_read_latency(engine_.time_of(Cycle(1)));
  dmi.set_write_latency(engine_.time_of(Cycle(1)));
  return true;
}

}  // namespace wafersim::hw

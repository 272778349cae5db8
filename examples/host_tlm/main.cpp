// A user's own sc_main driving a simulated wafer through its TLM-2.0 host socket: load a
// program onto a PE, write its input with b_transport, start a task through the PE's
// control block, wait until it is done, read the result back. Built and run by ctest, both
// inside this build and as a project of its own against the installed package
// (examples/host_tlm/CMakeLists.txt, docs/package.md).

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include <wafersim/hw/isa/assembler.h>
#include <wafersim/platforms/platform_spec.h>
#include <wafersim/platforms/wafer.h>

using namespace sc_core;
using wafersim::hw::AddressMap;
using wafersim::hw::PeCoord;

// y = 2 x + y on 8 floats, started by the host (task 1 is not an entry task).
const char* kProgram = R"(
.pe 2, 1
.dsd x, mem, f32, base=0x000, len=8
.dsd y, mem, f32, base=0x108, len=8
.task scale, 1
scale:
  mov.f32 r1, 2.0
  fmac.f32 y, y, x, r1
  ret
)";

struct Host : sc_module {
  tlm_utils::simple_initiator_socket<Host> socket{"socket"};
  const AddressMap& map;
  int errors = 0;

  Host(const sc_module_name& n, const AddressMap& m) : sc_module(n), map(m) {
    SC_HAS_PROCESS(Host);
    SC_THREAD(run);
  }

  bool access(tlm::tlm_command cmd, std::uint64_t addr, void* data, unsigned len) {
    tlm::tlm_generic_payload p;
    sc_time delay = SC_ZERO_TIME;
    p.set_command(cmd);
    p.set_address(addr);
    p.set_data_ptr(static_cast<unsigned char*>(data));
    p.set_data_length(len);
    p.set_streaming_width(len);
    socket->b_transport(p, delay);
    wait(delay);  // the access takes this long
    return p.is_response_ok();
  }

  void run() {
    const PeCoord pe{2, 1};
    float x[8], y[8];
    for (int i = 0; i < 8; ++i) x[i] = static_cast<float>(i), y[i] = 100.0f;
    access(tlm::TLM_WRITE_COMMAND, map.address(pe, 0x000), x, sizeof x);
    access(tlm::TLM_WRITE_COMMAND, map.address(pe, 0x108), y, sizeof y);

    std::uint32_t task = 1, status = 1;
    access(tlm::TLM_WRITE_COMMAND, map.address(pe, map.control_base() + AddressMap::kActivate), &task, 4);
    while (status & 1) {  // poll STATUS until the PE is idle
      wait(10, SC_NS);
      access(tlm::TLM_READ_COMMAND, map.address(pe, map.control_base() + AddressMap::kStatus), &status, 4);
    }
    access(tlm::TLM_READ_COMMAND, map.address(pe, 0x108), y, sizeof y);
    for (int i = 0; i < 8; ++i) {
      std::printf("y[%d] = %g\n", i, static_cast<double>(y[i]));
      if (y[i] != 100.0f + 2.0f * static_cast<float>(i)) ++errors;
    }
    // Beyond the PE's 48 KiB: refused, never wrapped.
    if (access(tlm::TLM_READ_COMMAND, map.address(pe, 0xC000), y, 4)) ++errors;
    std::printf("done at %s, %d error(s)\n", sc_time_stamp().to_string().c_str(), errors);
  }
};

int sc_main(int, char*[]) {
  auto platform = wafersim::platforms::load_platform("tiny");
  wafersim::sim::stats::Group stats("");
  wafersim::platforms::Wafer wafer("wafer", platform.spec, {}, stats);
  for (const auto& placement : wafersim::hw::isa::assemble(kProgram, "scale.s")) wafer.cores().load(placement);

  Host host("host", wafer.address_map());
  host.socket.bind(wafer.host_socket());
  sc_start();
  return host.errors == 0 ? 0 : 1;
}

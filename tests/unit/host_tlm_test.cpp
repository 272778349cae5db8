// The wafer's TLM-2.0 host socket: one address map reaching every PE's SRAM, timed
// b_transport, untimed transport_dbg, DMI, refused accesses that name the PE and address,
// and task activation through the control block. Each test elaborates its own kernel.

#include <gtest/gtest.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include <functional>
#include <vector>

#include "hw/isa/assembler.h"
#include "platforms/platform_spec.h"
#include "platforms/wafer.h"

namespace wafersim::test::host_tlm_test {
namespace {

using hw::AddressMap;
using hw::PeCoord;
using namespace sc_core;

// A host initiator as one SC_METHOD walking through a script: each step performs its
// accesses and returns how long to wait before the next (no SC_THREAD: LeakSanitizer cannot
// scan SystemC's guard-paged thread stacks).
struct Initiator : sc_module {
  using Step = std::function<sc_time(Initiator&)>;
  tlm_utils::simple_initiator_socket<Initiator> socket{"socket"};
  std::vector<Step> steps;
  std::size_t next = 0;
  bool finished = false;
  Initiator(const sc_module_name& n, std::vector<Step> s) : sc_module(n), steps(std::move(s)) {
    SC_HAS_PROCESS(Initiator);
    SC_METHOD(run);
  }
  Initiator(const sc_module_name& n, std::function<void(Initiator&)> once)
      : Initiator(n, std::vector<Step>{[once](Initiator& h) {
                    once(h);
                    return SC_ZERO_TIME;
                  }}) {}
  void run() {
    while (next < steps.size()) {
      const sc_time wait_for = steps[next++](*this);
      if (wait_for > SC_ZERO_TIME) {
        next_trigger(wait_for);
        return;
      }
    }
    finished = true;
  }
  // One b_transport; returns the response and adds the annotated delay to *delay.
  tlm::tlm_response_status access(tlm::tlm_command cmd, std::uint64_t addr, void* data, unsigned len, sc_time* delay) {
    tlm::tlm_generic_payload p;
    p.set_command(cmd);
    p.set_address(addr);
    p.set_data_ptr(static_cast<unsigned char*>(data));
    p.set_data_length(len);
    p.set_streaming_width(len);
    socket->b_transport(p, *delay);
    return p.get_response_status();
  }
  unsigned debug(tlm::tlm_command cmd, std::uint64_t addr, void* data, unsigned len) {
    tlm::tlm_generic_payload p;
    p.set_command(cmd);
    p.set_address(addr);
    p.set_data_ptr(static_cast<unsigned char*>(data));
    p.set_data_length(len);
    p.set_streaming_width(len);
    return socket->transport_dbg(p);
  }
};

struct Bench {
  platforms::LoadedPlatform platform = platforms::load_platform("tiny");
  sim::stats::Group stats{""};
  platforms::Wafer wafer{"wafer", platform.spec, {}, stats};
  const AddressMap& map = wafer.address_map();
  sc_time cycle = wafer.engine().time_of(sim::Cycle(1));
  sc_time cycles(std::uint64_t n) const { return wafer.engine().time_of(sim::Cycle(n)); }
};

TEST(HostTlm, AddressMapReachesEveryPe) {
  Bench b;
  EXPECT_EQ(b.map.window(), 0x10000u);  // 48 KiB SRAM + 16-byte control block -> 64 KiB
  EXPECT_EQ(b.map.size(), 64u * 0x10000u);
  EXPECT_EQ(b.map.address(PeCoord{3, 2}, 0x100), (2u * 8 + 3) * 0x10000u + 0x100);
  auto d = b.map.decode(b.map.address(PeCoord{7, 7}, 0xBFFF));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->pe, (PeCoord{7, 7}));
  EXPECT_EQ(d->offset, 0xBFFFu);
  EXPECT_FALSE(b.map.decode(64u * 0x10000u));
  EXPECT_EQ(AddressMap(757, 996, 48 * 1024).size(), 757ull * 996 * 0x10000);  // a whole WSE-2 in 46 bits
}

TEST(HostTlm, TimedWritesAndReadsLandInTheRightPe) {
  Bench b;
  std::uint8_t out[16], in[16] = {};
  for (int i = 0; i < 16; ++i) out[i] = static_cast<std::uint8_t>(0xA0 + i);
  sc_time write_delay = SC_ZERO_TIME, read_delay = SC_ZERO_TIME;
  Initiator host("host", [&](Initiator& h) {
    EXPECT_EQ(h.access(tlm::TLM_WRITE_COMMAND, b.map.address(PeCoord{3, 2}, 0x100), out, 16, &write_delay),
              tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(h.access(tlm::TLM_READ_COMMAND, b.map.address(PeCoord{3, 2}, 0x100), in, 16, &read_delay),
              tlm::TLM_OK_RESPONSE);
  });
  host.socket.bind(b.wafer.host_socket());
  sc_start();
  ASSERT_TRUE(host.finished);
  EXPECT_EQ(std::memcmp(in, out, 16), 0);
  // 16 bytes through one 64-bit write port: 1 + 2 cycles; through two read ports: 1 + 1.
  EXPECT_EQ(write_delay, b.cycles(3));
  EXPECT_EQ(read_delay, b.cycles(2));
  EXPECT_EQ(b.wafer.cores().cores_created(), 1u);  // only PE (3, 2) exists
  EXPECT_EQ(b.wafer.cores().find(PeCoord{3, 2})->sram().load(0x104, 4), 0xA7A6A5A4u);
}

TEST(HostTlm, AccessesBeyondThePeOrTheWaferAreRefusedAndNamed) {
  Bench b;
  std::uint8_t buf[8] = {};
  Initiator host("host", [&](Initiator& h) {
    sc_time d = SC_ZERO_TIME;
    EXPECT_EQ(h.access(tlm::TLM_WRITE_COMMAND, b.map.address(PeCoord{3, 2}, 0xBFFC), buf, 8, &d),
              tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(b.wafer.host_port().last_error(),
              "PE (3, 2): address 0x13bffc (offset 0xbffc, 8 bytes) is beyond its 48 KiB SRAM");
    EXPECT_EQ(h.access(tlm::TLM_READ_COMMAND, b.map.address(PeCoord{0, 1}, 0xC000), buf, 4, &d),
              tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(b.wafer.host_port().last_error(),
              "PE (0, 1): address 0x8c000 (offset 0xc000, 4 bytes) is beyond its 48 KiB SRAM");
    EXPECT_EQ(h.access(tlm::TLM_READ_COMMAND, 64u * 0x10000u, buf, 4, &d), tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(b.wafer.host_port().last_error(),
              "address 0x400000 is beyond the last PE of the 8 x 8 wafer (map size 0x400000)");
    EXPECT_EQ(h.debug(tlm::TLM_READ_COMMAND, b.map.address(PeCoord{3, 2}, 0xBFFE), buf, 4), 0u);
    // The last bytes of the SRAM are fine.
    EXPECT_EQ(h.access(tlm::TLM_WRITE_COMMAND, b.map.address(PeCoord{3, 2}, 0xBFF8), buf, 8, &d), tlm::TLM_OK_RESPONSE);
  });
  host.socket.bind(b.wafer.host_socket());
  sc_start();
  EXPECT_TRUE(host.finished);
}

TEST(HostTlm, DebugTransportIsUntimedAndAllocatesNothingOnReads) {
  Bench b;
  Initiator host("host", [&](Initiator& h) {
    std::uint32_t v = 0xFFFFFFFF;
    EXPECT_EQ(h.debug(tlm::TLM_READ_COMMAND, b.map.address(PeCoord{5, 5}, 0x40), &v, 4), 4u);
    EXPECT_EQ(v, 0u);
    EXPECT_EQ(b.wafer.cores().cores_created(), 0u);
    v = 0x12345678;
    EXPECT_EQ(h.debug(tlm::TLM_WRITE_COMMAND, b.map.address(PeCoord{5, 5}, 0x40), &v, 4), 4u);
    EXPECT_EQ(b.wafer.cores().find(PeCoord{5, 5})->sram().load(0x40, 4), 0x12345678u);
    EXPECT_EQ(b.wafer.cores().find(PeCoord{5, 5})->sram().allocated_bytes(), 4096u);  // one page
    EXPECT_EQ(sc_time_stamp(), SC_ZERO_TIME);
  });
  host.socket.bind(b.wafer.host_socket());
  sc_start();
  EXPECT_TRUE(host.finished);
}

TEST(HostTlm, DirectMemoryAccessIsGrantedPerPage) {
  Bench b;
  Initiator host("host", [&](Initiator& h) {
    tlm::tlm_generic_payload p;
    tlm::tlm_dmi dmi;
    p.set_address(b.map.address(PeCoord{1, 1}, 0x1010));
    p.set_command(tlm::TLM_READ_COMMAND);
    ASSERT_TRUE(h.socket->get_direct_mem_ptr(p, dmi));
    EXPECT_EQ(dmi.get_start_address(), b.map.address(PeCoord{1, 1}, 0x1000));
    EXPECT_EQ(dmi.get_end_address(), b.map.address(PeCoord{1, 1}, 0x1FFF));
    EXPECT_TRUE(dmi.is_read_write_allowed());
    EXPECT_EQ(dmi.get_read_latency(), b.cycle);
    dmi.get_dmi_ptr()[0x10] = 0x5A;  // offset 0x1010
    EXPECT_EQ(b.wafer.cores().find(PeCoord{1, 1})->sram().load(0x1010, 2), 0x5Au);
    // The last page of a 48 KiB SRAM is a whole page; the control block is not DMI.
    p.set_address(b.map.address(PeCoord{1, 1}, 0xBFFF));
    ASSERT_TRUE(h.socket->get_direct_mem_ptr(p, dmi));
    EXPECT_EQ(dmi.get_end_address(), b.map.address(PeCoord{1, 1}, 0xBFFF));
    p.set_address(b.map.address(PeCoord{1, 1}, b.map.control_base()));
    EXPECT_FALSE(h.socket->get_direct_mem_ptr(p, dmi));
  });
  host.socket.bind(b.wafer.host_socket());
  sc_start();
  EXPECT_TRUE(host.finished);
}

TEST(HostTlm, ControlBlockActivatesATaskAndReportsStatus) {
  Bench b;
  for (const auto& p : hw::isa::assemble(".pe 4, 4\n.task go, 3\ngo:\n  tsc r1\n  st [0x20], r1\n  ret\n", "go.s"))
    b.wafer.cores().load(p);
  std::uint64_t activated_at = 0;
  std::uint32_t v = 0;
  Initiator host(
      "host",
      std::vector<Initiator::Step>{
          [&](Initiator&) { return b.cycles(100); },
          [&](Initiator& h) -> sc_time {
            sc_time d = SC_ZERO_TIME;
            EXPECT_EQ(h.access(tlm::TLM_READ_COMMAND,
                               b.map.address(PeCoord{4, 4}, b.map.control_base() + AddressMap::kStatus), &v, 4, &d),
                      tlm::TLM_OK_RESPONSE);
            EXPECT_EQ(v, 2u);  // loaded, idle
            d = SC_ZERO_TIME;
            v = 3;
            EXPECT_EQ(h.access(tlm::TLM_WRITE_COMMAND,
                               b.map.address(PeCoord{4, 4}, b.map.control_base() + AddressMap::kActivate), &v, 4, &d),
                      tlm::TLM_OK_RESPONSE);
            // The access ends 2 cycles after cycle 100; the task is activated the cycle after.
            activated_at = 100 + 2 + 1;
            return b.cycles(50);
          },
          [&](Initiator& h) -> sc_time {
            sc_time d = SC_ZERO_TIME;
            v = 9;
            EXPECT_EQ(h.access(tlm::TLM_WRITE_COMMAND,
                               b.map.address(PeCoord{4, 4}, b.map.control_base() + AddressMap::kActivate), &v, 4, &d),
                      tlm::TLM_GENERIC_ERROR_RESPONSE);
            EXPECT_EQ(b.wafer.host_port().last_error(), "PE (4, 4): task 9 is not a local task of go.s");
            return SC_ZERO_TIME;
          }});
  host.socket.bind(b.wafer.host_socket());
  sc_start();
  EXPECT_TRUE(host.finished);
  // Selected at the activation cycle, first instruction after task_switch (2 cycles).
  EXPECT_EQ(b.wafer.cores().find(PeCoord{4, 4})->sram().load(0x20, 4), activated_at + 2);
}

}  // namespace
}  // namespace wafersim::test::host_tlm_test

#pragma once
// A per-PE program in its in-memory form: instructions, descriptors, tasks and initial
// data. The assembler produces it from text; the compiler will emit the same form.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hw/isa/descriptor.h"
#include "hw/isa/opcodes.h"
#include "hw/numerics/dtype.h"
#include "hw/types.h"
#include "sim/config/node.h"

namespace wafersim::hw::isa {

inline constexpr unsigned kRegisters = 16;
inline constexpr unsigned kMaxTasks = 64;

struct Operand {
  enum class Kind : std::uint8_t { None, Reg, Imm, Dsd, Task, Mem };
  Kind kind = Kind::None;
  std::uint8_t reg = 0;  // Reg; Mem: base register (kNoBase: absolute address)
  std::int64_t imm = 0;  // Imm: value (branch target pc, color, ...); Mem: offset; Dsd: index; Task: id
  static constexpr std::uint8_t kNoBase = 0xff;

  static Operand r(unsigned reg) { return {Kind::Reg, static_cast<std::uint8_t>(reg), 0}; }
  static Operand i(std::int64_t v) { return {Kind::Imm, 0, v}; }
  static Operand dsd(unsigned index) { return {Kind::Dsd, 0, index}; }
  static Operand task(unsigned id) { return {Kind::Task, 0, id}; }
  static Operand mem(std::uint8_t base, std::int64_t off) { return {Kind::Mem, base, off}; }
};

// What an asynchronous vector instruction does to a task when it completes.
enum class OnDone : std::uint8_t { None, Activate, Unblock };

struct Instruction {
  Op op = Op::Nop;
  Cond cond = Cond::Eq;
  DType type = DType::F32;   // result (accumulator) format
  DType type2 = DType::F32;  // input format of mixed-precision fmac/fdot and source of fcvt; else = type
  std::uint8_t width = 4;    // ld/st: bytes (2 or 4)
  bool vector = false;       // an operand is a descriptor
  bool async = false;        // runs on a microthread; the task goes on
  bool control = false;      // send: a control wavelet
  OnDone on_done = OnDone::None;
  std::uint8_t done_task = 0;
  // async: the ordered microthread it runs on (kUnordered: any free one). Operations of one
  // ordered microthread take their steps in issue order (docs/isa.md, "Ordered microthreads").
  std::uint8_t ut = kUnordered;
  static constexpr std::uint8_t kUnordered = 0xff;
  Operand ops[4];
};

struct TaskDecl {
  std::string name;
  std::uint8_t id = 0;
  bool data = false;        // bound to an input color: activated by each wavelet arriving on it
  std::uint8_t color = 0;   // data tasks
  std::uint32_t entry = 0;  // pc of the first instruction
  sim::config::Location location;
};

struct DescriptorDecl {
  std::string name;
  Descriptor init;
  sim::config::Location location;
};

struct DataInit {
  std::uint32_t addr = 0;
  std::vector<std::uint8_t> bytes;
  sim::config::Location location;
  bool control = false;  // steers branches (a compiler's table): stored in timing-only mode too
};

struct Program {
  std::string file;
  std::vector<Instruction> code;
  std::vector<sim::config::Location> where;  // source of each instruction
  std::vector<std::string> text;             // its source text, for diagnostics
  std::vector<DescriptorDecl> descriptors;
  std::vector<TaskDecl> tasks;
  std::vector<DataInit> data;
  std::vector<std::uint8_t> entry_tasks;  // activated when the program is loaded

  [[nodiscard]] const TaskDecl* task(std::uint8_t id) const {
    for (const auto& t : tasks)
      if (t.id == id) return &t;
    return nullptr;
  }
  // "fmac.f32 at prog.s:12:5" for diagnostics.
  [[nodiscard]] std::string describe(std::uint32_t pc) const;
};

// The PEs one program is loaded onto (a `.pe` section of an assembly file): the rectangle
// x0..x1, y0..y1 (inclusive).
struct Placement {
  std::uint16_t x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  std::shared_ptr<const Program> program;
  sim::config::Location location;
  [[nodiscard]] bool contains(PeCoord c) const { return c.x >= x0 && c.x <= x1 && c.y >= y0 && c.y <= y1; }
};

}  // namespace wafersim::hw::isa

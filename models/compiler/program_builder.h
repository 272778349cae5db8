#pragma once
// Builds one PE program in the core's in-memory form (hw::isa::Program), as the assembler
// would from text: descriptors, tasks, labels and instructions, with each instruction's
// assembly text kept for diagnostics and `wafersim compile --emit`.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hw/isa/program.h"

namespace wafersim::models::compiler {

// A vector operand: a descriptor (by index) or a register broadcast to every element.
struct VOperand {
  enum class Kind : std::uint8_t { None, Dsd, Reg };
  Kind kind = Kind::None;
  unsigned index = 0;
  static VOperand d(unsigned dsd) { return {Kind::Dsd, dsd}; }
  static VOperand r(unsigned reg) { return {Kind::Reg, reg}; }
};

// Options of a vector instruction: run on a microthread (an ordered one with `ut`), and
// what to do on completion.
struct VectorOptions {
  bool async = false;
  hw::isa::OnDone on_done = hw::isa::OnDone::None;
  std::uint8_t task = 0;
  std::uint8_t ut = hw::isa::Instruction::kUnordered;
};

// Contract: every method checks its arguments the way the assembler checks text and throws
// std::logic_error on misuse (a compiler bug, never user input); finish() resolves labels and
// returns a program the core accepts. Instruction `where` locations are "<name>:<pc+1>:1".
class ProgramBuilder {
 public:
  using DType = hw::DType;
  using Op = hw::isa::Op;
  using Cond = hw::isa::Cond;

  explicit ProgramBuilder(std::string name);

  // Descriptors (return their index).
  unsigned mem(const std::string& name, DType t, std::uint32_t base, std::uint32_t len, std::int32_t stride = 1);
  unsigned circ(const std::string& name, DType t, std::uint32_t base, std::uint32_t size, std::uint32_t len);
  unsigned fabin(const std::string& name, DType t, std::uint8_t color, std::uint32_t len, bool sparse = false);
  // A fabric input whose every wavelet feeds `repeat` consecutive elements (docs/isa.md).
  unsigned fabin_repeat(const std::string& name, DType t, std::uint8_t color, std::uint32_t len, std::uint32_t repeat);
  unsigned fabout(const std::string& name, DType t, std::uint8_t color, std::uint32_t len);

  // Tasks: a local task or a data task whose code starts at the current position.
  std::uint8_t task(const std::string& name);
  std::uint8_t data_task(const std::string& name, std::uint8_t color);
  // Declares a task whose code starts later (bind it with start()).
  std::uint8_t declare_task(const std::string& name);
  void start(std::uint8_t task);
  void entry(std::uint8_t task);

  // Labels for branches.
  unsigned label();
  void bind(unsigned label);

  // Initial SRAM contents; `control`: they steer branches (stored in timing-only mode too).
  void data(std::uint32_t addr, std::vector<std::uint8_t> bytes, bool control = false);

  // Scalar instructions.
  void mov(unsigned rd, std::int64_t imm);
  void movr(unsigned rd, unsigned rs);
  void movf(unsigned rd, DType t, std::uint32_t bits);
  void alu(Op op, unsigned rd, unsigned ra, std::int64_t imm);
  void alur(Op op, unsigned rd, unsigned ra, unsigned rb);
  void branch(Cond c, unsigned ra, std::int64_t imm, unsigned label);
  void jmp(unsigned label);
  void ld(unsigned rd, std::uint32_t addr, unsigned width = 4, int base_reg = -1);
  void st(std::uint32_t addr, unsigned rs, unsigned width = 4, int base_reg = -1);
  void recv(unsigned rd, std::uint8_t color);
  void send(std::uint8_t color, unsigned rs);
  void activate(std::uint8_t task);
  void block(std::uint8_t task);
  void unblock(std::uint8_t task);
  void ret();
  void dsd(Op op, unsigned dsd, std::int64_t imm);  // dsd.base/len/add/stride/color with an immediate
  void dsdr(Op op, unsigned dsd, unsigned reg);
  // Scalar float on registers: fadd/fsub/fmul/fmax/fmin rD, rA, rB; fneg/fexp/frecip/fmov rD, rA.
  void fscalar(Op op, DType t, unsigned rd, unsigned ra, unsigned rb = 0);
  void fmac_scalar(DType t, unsigned rd, unsigned ra, unsigned rb, unsigned rc);
  void fcvt_scalar(DType to, DType from, unsigned rd, unsigned ra);
  void fcmp(Cond c, DType t, unsigned rd, unsigned ra, unsigned rb);

  // Vector instructions (at least one descriptor operand). `t2` is the input format of mixed
  // fmac/fdot and the source format of fcvt (equal to t otherwise).
  using VectorOptions = compiler::VectorOptions;
  void vop(Op op, DType t, DType t2, VOperand d, VOperand a, VOperand b = {}, VOperand c = {}, VectorOptions o = {});
  // Reductions into a register: fsum/frmax/frmin rD, A; fdot rD, A, B.
  void reduce(Op op, DType t, DType t2, unsigned rd, VOperand a, VOperand b = {});

  [[nodiscard]] std::uint32_t pc() const { return static_cast<std::uint32_t>(p_->code.size()); }
  [[nodiscard]] const hw::isa::Program& program() const { return *p_; }
  std::shared_ptr<const hw::isa::Program> finish();

 private:
  void push(hw::isa::Instruction ins);
  [[nodiscard]] const hw::isa::Descriptor& descriptor(unsigned d) const;
  void check_reg(unsigned r) const;
  unsigned add_dsd(const std::string& name, const hw::isa::Descriptor& d);
  unsigned fabric_in(const std::string& name, DType t, std::uint8_t color, std::uint32_t len, bool sparse,
                     std::uint32_t repeat);

  std::shared_ptr<hw::isa::Program> p_;
  std::vector<std::int64_t> labels_;  // pc or -1
  struct Fixup {
    std::uint32_t pc;
    int slot;
    unsigned label;
  };
  std::vector<Fixup> fixups_;
  std::vector<bool> started_;  // by task index in p_->tasks
  bool finished_ = false;
};

}  // namespace wafersim::models::compiler

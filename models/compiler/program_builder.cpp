#include "models/compiler/program_builder.h"

#include <fmt/format.h>

#include <stdexcept>

#include "hw/isa/disassemble.h"

namespace wafersim::models::compiler {
using hw::isa::Descriptor;
using hw::isa::Instruction;
using hw::isa::Operand;

namespace {
[[noreturn]] void misuse(const std::string& what) { throw std::logic_error("ProgramBuilder: " + what); }
}  // namespace

ProgramBuilder::ProgramBuilder(std::string name) : p_(std::make_shared<hw::isa::Program>()) {
  p_->file = std::move(name);
}

unsigned ProgramBuilder::add_dsd(const std::string& name, const Descriptor& d) {
  for (const auto& x : p_->descriptors)
    if (x.name == name) misuse("descriptor '" + name + "' declared twice");
  if (d.is_memory() && d.base % hw::size_of(d.dtype)) misuse("misaligned descriptor '" + name + "'");
  hw::isa::DescriptorDecl decl;
  decl.name = name;
  decl.init = d;
  decl.location = {p_->file, 0, 0};
  p_->descriptors.push_back(decl);
  return static_cast<unsigned>(p_->descriptors.size() - 1);
}

unsigned ProgramBuilder::mem(const std::string& name, DType t, std::uint32_t base, std::uint32_t len,
                             std::int32_t stride) {
  Descriptor d;
  d.kind = Descriptor::Kind::Mem;
  d.dtype = t;
  d.base = base;
  d.length = len;
  d.stride = stride;
  return add_dsd(name, d);
}

unsigned ProgramBuilder::circ(const std::string& name, DType t, std::uint32_t base, std::uint32_t size,
                              std::uint32_t len) {
  if (size == 0) misuse("circular buffer of size 0");
  Descriptor d;
  d.kind = Descriptor::Kind::Circ;
  d.dtype = t;
  d.base = base;
  d.size = size;
  d.length = len;
  return add_dsd(name, d);
}

unsigned ProgramBuilder::fabin(const std::string& name, DType t, std::uint8_t color, std::uint32_t len, bool sparse) {
  return fabric_in(name, t, color, len, sparse, 1);
}

unsigned ProgramBuilder::fabin_repeat(const std::string& name, DType t, std::uint8_t color, std::uint32_t len,
                                      std::uint32_t repeat) {
  if (repeat == 0) misuse("fabric input with a repeat of 0");
  return fabric_in(name, t, color, len, false, repeat);
}

unsigned ProgramBuilder::fabric_in(const std::string& name, DType t, std::uint8_t color, std::uint32_t len, bool sparse,
                                   std::uint32_t repeat) {
  Descriptor d;
  d.kind = Descriptor::Kind::FabIn;
  d.dtype = t;
  d.color = color;
  d.length = len;
  d.sparse = sparse;
  d.repeat = repeat;
  return add_dsd(name, d);
}

unsigned ProgramBuilder::fabout(const std::string& name, DType t, std::uint8_t color, std::uint32_t len) {
  Descriptor d;
  d.kind = Descriptor::Kind::FabOut;
  d.dtype = t;
  d.color = color;
  d.length = len;
  return add_dsd(name, d);
}

std::uint8_t ProgramBuilder::declare_task(const std::string& name) {
  if (p_->tasks.size() >= hw::isa::kMaxTasks) misuse("more than 64 tasks");
  for (const auto& t : p_->tasks)
    if (t.name == name) misuse("task '" + name + "' declared twice");
  hw::isa::TaskDecl t;
  t.name = name;
  t.id = static_cast<std::uint8_t>(p_->tasks.size());
  t.location = {p_->file, 0, 0};
  p_->tasks.push_back(t);
  started_.push_back(false);
  return t.id;
}

void ProgramBuilder::start(std::uint8_t task) {
  if (task >= p_->tasks.size() || started_[task]) misuse("start of an unknown or started task");
  p_->tasks[task].entry = pc();
  started_[task] = true;
}

std::uint8_t ProgramBuilder::task(const std::string& name) {
  const std::uint8_t id = declare_task(name);
  start(id);
  return id;
}

std::uint8_t ProgramBuilder::data_task(const std::string& name, std::uint8_t color) {
  for (const auto& t : p_->tasks)
    if (t.data && t.color == color) misuse("two data tasks on one color");
  const std::uint8_t id = task(name);
  p_->tasks[id].data = true;
  p_->tasks[id].color = color;
  return id;
}

void ProgramBuilder::entry(std::uint8_t task) {
  if (task >= p_->tasks.size() || p_->tasks[task].data) misuse("entry must be a local task");
  p_->entry_tasks.push_back(task);
}

unsigned ProgramBuilder::label() {
  labels_.push_back(-1);
  return static_cast<unsigned>(labels_.size() - 1);
}

void ProgramBuilder::bind(unsigned l) {
  if (l >= labels_.size() || labels_[l] >= 0) misuse("bind of an unknown or bound label");
  labels_[l] = pc();
}

void ProgramBuilder::data(std::uint32_t addr, std::vector<std::uint8_t> bytes, bool control) {
  if (addr % 2 || bytes.size() % 2) misuse("data must be whole 16-bit words");
  hw::isa::DataInit d;
  d.addr = addr;
  d.bytes = std::move(bytes);
  d.location = {p_->file, 0, 0};
  d.control = control;
  p_->data.push_back(std::move(d));
}

void ProgramBuilder::check_reg(unsigned r) const {
  if (r >= hw::isa::kRegisters) misuse(fmt::format("register r{}", r));
}

void ProgramBuilder::push(Instruction ins) {
  if (finished_) misuse("instruction after finish()");
  p_->code.push_back(ins);
  p_->where.push_back({p_->file, static_cast<int>(p_->code.size()), 1});
}

void ProgramBuilder::mov(unsigned rd, std::int64_t imm) {
  check_reg(rd);
  Instruction i;
  i.op = Op::Mov;
  i.ops[0] = Operand::r(rd);
  i.ops[1] = Operand::i(static_cast<std::uint32_t>(imm));
  push(i);
}

void ProgramBuilder::movr(unsigned rd, unsigned rs) {
  check_reg(rd);
  check_reg(rs);
  Instruction i;
  i.op = Op::Mov;
  i.ops[0] = Operand::r(rd);
  i.ops[1] = Operand::r(rs);
  push(i);
}

void ProgramBuilder::movf(unsigned rd, DType t, std::uint32_t bits) {
  mov(rd, bits);
  p_->code.back().type = t;
}

void ProgramBuilder::alu(Op op, unsigned rd, unsigned ra, std::int64_t imm) {
  check_reg(rd);
  check_reg(ra);
  Instruction i;
  i.op = op;
  i.ops[0] = Operand::r(rd);
  i.ops[1] = Operand::r(ra);
  i.ops[2] = Operand::i(imm);
  push(i);
}

void ProgramBuilder::alur(Op op, unsigned rd, unsigned ra, unsigned rb) {
  check_reg(rb);
  alu(op, rd, ra, 0);
  p_->code.back().ops[2] = Operand::r(rb);
}

void ProgramBuilder::branch(Cond c, unsigned ra, std::int64_t imm, unsigned l) {
  check_reg(ra);
  Instruction i;
  i.op = Op::Branch;
  i.cond = c;
  i.ops[0] = Operand::r(ra);
  i.ops[1] = Operand::i(imm);
  i.ops[2] = Operand::i(0);
  fixups_.push_back({pc(), 2, l});
  push(i);
}

void ProgramBuilder::jmp(unsigned l) {
  Instruction i;
  i.op = Op::Jmp;
  i.ops[0] = Operand::i(0);
  fixups_.push_back({pc(), 0, l});
  push(i);
}

void ProgramBuilder::ld(unsigned rd, std::uint32_t addr, unsigned width, int base_reg) {
  check_reg(rd);
  Instruction i;
  i.op = Op::Ld;
  i.width = static_cast<std::uint8_t>(width);
  i.ops[0] = Operand::r(rd);
  i.ops[1] = Operand::mem(base_reg < 0 ? Operand::kNoBase : static_cast<std::uint8_t>(base_reg), addr);
  push(i);
}

void ProgramBuilder::st(std::uint32_t addr, unsigned rs, unsigned width, int base_reg) {
  check_reg(rs);
  Instruction i;
  i.op = Op::St;
  i.width = static_cast<std::uint8_t>(width);
  i.ops[0] = Operand::mem(base_reg < 0 ? Operand::kNoBase : static_cast<std::uint8_t>(base_reg), addr);
  i.ops[1] = Operand::r(rs);
  push(i);
}

void ProgramBuilder::recv(unsigned rd, std::uint8_t color) {
  check_reg(rd);
  Instruction i;
  i.op = Op::Recv;
  i.ops[0] = Operand::r(rd);
  i.ops[1] = Operand::i(color);
  push(i);
}

void ProgramBuilder::send(std::uint8_t color, unsigned rs) {
  check_reg(rs);
  Instruction i;
  i.op = Op::Send;
  i.ops[0] = Operand::i(color);
  i.ops[1] = Operand::r(rs);
  push(i);
}

namespace {
Instruction task_op(hw::isa::Op op, std::uint8_t task) {
  Instruction i;
  i.op = op;
  i.ops[0] = Operand::task(task);
  return i;
}
}  // namespace

void ProgramBuilder::activate(std::uint8_t t) { push(task_op(Op::Activate, t)); }
void ProgramBuilder::block(std::uint8_t t) { push(task_op(Op::Block, t)); }
void ProgramBuilder::unblock(std::uint8_t t) { push(task_op(Op::Unblock, t)); }

void ProgramBuilder::ret() {
  Instruction i;
  i.op = Op::Ret;
  push(i);
}

void ProgramBuilder::dsd(Op op, unsigned d, std::int64_t imm) {
  if (op < Op::DsdBase || op > Op::DsdColor) misuse("not a descriptor instruction");
  (void)descriptor(d);
  Instruction i;
  i.op = op;
  i.ops[0] = Operand::dsd(d);
  i.ops[1] = Operand::i(imm);
  push(i);
}

void ProgramBuilder::dsdr(Op op, unsigned d, unsigned reg) {
  check_reg(reg);
  dsd(op, d, 0);
  p_->code.back().ops[1] = Operand::r(reg);
}

void ProgramBuilder::fscalar(Op op, DType t, unsigned rd, unsigned ra, unsigned rb) {
  check_reg(rd);
  check_reg(ra);
  check_reg(rb);
  Instruction i;
  i.op = op;
  i.type = i.type2 = t;
  i.ops[0] = Operand::r(rd);
  i.ops[1] = Operand::r(ra);
  i.ops[2] = Operand::r(rb);
  push(i);
}

void ProgramBuilder::fmac_scalar(DType t, unsigned rd, unsigned ra, unsigned rb, unsigned rc) {
  check_reg(rc);
  fscalar(Op::FMac, t, rd, ra, rb);
  p_->code.back().ops[3] = Operand::r(rc);
}

void ProgramBuilder::fcvt_scalar(DType to, DType from, unsigned rd, unsigned ra) {
  fscalar(Op::FCvt, to, rd, ra);
  p_->code.back().type2 = from;
}

void ProgramBuilder::fcmp(Cond c, DType t, unsigned rd, unsigned ra, unsigned rb) {
  fscalar(Op::FCmp, t, rd, ra, rb);
  p_->code.back().cond = c;
}

const Descriptor& ProgramBuilder::descriptor(unsigned d) const {
  if (d >= p_->descriptors.size()) misuse(fmt::format("unknown descriptor {}", d));
  return p_->descriptors[d].init;
}

void ProgramBuilder::vop(Op op, DType t, DType t2, VOperand d, VOperand a, VOperand b, VOperand c, VectorOptions o) {
  if (op < Op::FMov || hw::isa::is_reduction(op) || op == Op::FCmp) misuse("vop takes a vector float instruction");
  const VOperand v[4] = {d, a, b, c};
  const int arity = op == Op::FMac                                                                             ? 4
                    : (op == Op::FAdd || op == Op::FSub || op == Op::FMul || op == Op::FMax || op == Op::FMin) ? 3
                                                                                                               : 2;
  Instruction i;
  i.op = op;
  i.type = t;
  i.type2 = t2;
  i.vector = true;
  i.async = o.async;
  i.on_done = o.on_done;
  i.done_task = o.task;
  i.ut = o.ut;
  if (o.ut != Instruction::kUnordered && !o.async) misuse("a microthread (ut) needs async");
  int fab_in = 0, fab_out = 0;
  bool any = false;
  for (int k = 0; k < 4; ++k) {
    if (k >= arity) {
      if (v[k].kind != VOperand::Kind::None) misuse("too many operands");
      continue;
    }
    if (v[k].kind == VOperand::Kind::None) misuse(fmt::format("missing operand {}", k));
    if (v[k].kind == VOperand::Kind::Reg) {
      if (k == 0) misuse("a vector destination must be a descriptor");
      check_reg(v[k].index);
      i.ops[k] = Operand::r(v[k].index);
      continue;
    }
    const Descriptor& x = descriptor(v[k].index);
    DType want = t;
    if ((op == Op::FMac && k >= 2) || (op == Op::FCvt && k == 1)) want = t2;
    if (x.dtype != want)
      misuse(fmt::format("operand {} of {} is {}, expected {}", p_->descriptors[v[k].index].name,
                         hw::isa::info(op).mnemonic, hw::name(x.dtype), hw::name(want)));
    if (k == 0 && x.kind == Descriptor::Kind::FabIn) misuse("fabric input as destination");
    if (k > 0 && x.kind == Descriptor::Kind::FabOut) misuse("fabric output as source");
    fab_in += x.kind == Descriptor::Kind::FabIn;
    fab_out += x.kind == Descriptor::Kind::FabOut;
    any = true;
    i.ops[k] = Operand::dsd(v[k].index);
  }
  if (!any) misuse("a vector instruction needs a descriptor");
  if (fab_in > 1 || fab_out > 1) misuse("at most one fabric input and one output");
  if (o.on_done != hw::isa::OnDone::None && !o.async) misuse("a completion action needs async");
  push(i);
}

void ProgramBuilder::reduce(Op op, DType t, DType t2, unsigned rd, VOperand a, VOperand b) {
  if (!hw::isa::is_reduction(op)) misuse("reduce takes fsum, fdot, frmax or frmin");
  check_reg(rd);
  Instruction i;
  i.op = op;
  i.type = t;
  i.type2 = t2;
  i.vector = true;
  i.ops[0] = Operand::r(rd);
  const VOperand v[2] = {a, b};
  const int n = op == Op::FDot ? 2 : 1;
  for (int k = 0; k < n; ++k) {
    if (v[k].kind == VOperand::Kind::None) misuse("missing operand");
    if (v[k].kind == VOperand::Kind::Reg) {
      check_reg(v[k].index);
      i.ops[k + 1] = Operand::r(v[k].index);
    } else {
      const Descriptor& x = descriptor(v[k].index);
      if (x.dtype != (op == Op::FDot ? t2 : t)) misuse("reduction operand type");
      i.ops[k + 1] = Operand::dsd(v[k].index);
    }
  }
  if (i.ops[1].kind != Operand::Kind::Dsd) misuse("a reduction's first source must be a descriptor");
  push(i);
}

std::shared_ptr<const hw::isa::Program> ProgramBuilder::finish() {
  if (finished_) misuse("finish() twice");
  for (std::size_t t = 0; t < started_.size(); ++t)
    if (!started_[t]) misuse("task '" + p_->tasks[t].name + "' has no code");
  for (const auto& f : fixups_) {
    if (f.label >= labels_.size() || labels_[f.label] < 0) misuse("branch to an unbound label");
    p_->code[f.pc].ops[f.slot] = Operand::i(labels_[f.label]);
  }
  p_->text.clear();
  for (std::uint32_t pc = 0; pc < p_->code.size(); ++pc) p_->text.push_back(hw::isa::instruction_text(*p_, pc));
  finished_ = true;
  return p_;
}

}  // namespace wafersim::models::compiler

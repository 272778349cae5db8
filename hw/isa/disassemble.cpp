#include "hw/isa/disassemble.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace wafersim::hw::isa {
using hw::isa::Descriptor;
using hw::isa::Instruction;
using hw::isa::Op;
using hw::isa::Operand;
using hw::isa::Program;

namespace {

std::string reg(unsigned r) { return fmt::format("r{}", r); }

std::string task_name(const Program& p, std::int64_t id) {
  const auto* t = p.task(static_cast<std::uint8_t>(id));
  return t ? t->name : fmt::format("task{}", id);
}

std::string vec_operand(const Program& p, const Operand& o) {
  if (o.kind == Operand::Kind::Dsd) return p.descriptors[static_cast<std::size_t>(o.imm)].name;
  return reg(o.reg);
}

std::string reg_or_imm(const Operand& o) {
  return o.kind == Operand::Kind::Reg ? reg(o.reg) : fmt::format("{}", o.imm);
}

std::string memory(const Operand& o) {
  if (o.reg == Operand::kNoBase) return fmt::format("[{:#x}]", o.imm);
  if (o.imm == 0) return fmt::format("[{}]", reg(o.reg));
  return o.imm < 0 ? fmt::format("[{} - {}]", reg(o.reg), -o.imm) : fmt::format("[{} + {}]", reg(o.reg), o.imm);
}

std::string types(const Instruction& ins) {
  std::string s = fmt::format(".{}", hw::name(ins.type));
  if (ins.type2 != ins.type) s += fmt::format(".{}", hw::name(ins.type2));
  return s;
}

std::string descriptor_line(const hw::isa::DescriptorDecl& d) {
  const Descriptor& x = d.init;
  const std::string head = fmt::format(".dsd {}, {}, {}", d.name, hw::isa::kind_name(x.kind), hw::name(x.dtype));
  switch (x.kind) {
    case Descriptor::Kind::Mem:
      return fmt::format("{}, base={:#x}, len={}, stride={}", head, x.base, x.length, x.stride);
    case Descriptor::Kind::Circ:
      return fmt::format("{}, base={:#x}, size={}, len={}, start={}", head, x.base, x.size, x.length, x.start);
    case Descriptor::Kind::FabIn:
      return fmt::format("{}, color={}, len={}{}{}", head, x.color, x.length,
                         x.repeat > 1 ? fmt::format(", repeat={}", x.repeat) : "", x.sparse ? ", sparse" : "");
    case Descriptor::Kind::FabOut:
      return fmt::format("{}, color={}, len={}", head, x.color, x.length);
  }
  return head;
}

}  // namespace

std::string instruction_text(const Program& p, std::uint32_t pc) {
  const Instruction& ins = p.code.at(pc);
  const auto& o = ins.ops;
  const std::string mn(hw::isa::info(ins.op).mnemonic);
  auto label = [](std::int64_t target) { return fmt::format("L{}", target); };
  std::string s;
  switch (ins.op) {
    case Op::Nop:
    case Op::Ret:
      return mn;
    case Op::Mov:  // mov.T rD, FLOAT stores the literal's bits: printed as the integer it is
      return fmt::format("mov {}, {}", reg(o[0].reg), reg_or_imm(o[1]));
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::And:
    case Op::Or:
    case Op::Xor:
    case Op::Shl:
    case Op::Shr:
    case Op::Sra:
      return fmt::format("{} {}, {}, {}", mn, reg(o[0].reg), reg(o[1].reg), reg_or_imm(o[2]));
    case Op::Cmp:
      return fmt::format("cmp.{} {}, {}, {}", hw::isa::cond_name(ins.cond), reg(o[0].reg), reg(o[1].reg),
                         reg_or_imm(o[2]));
    case Op::Branch:
      return fmt::format("b{} {}, {}, {}", hw::isa::cond_name(ins.cond), reg(o[0].reg), reg_or_imm(o[1]),
                         label(o[2].imm));
    case Op::Jmp:
      return fmt::format("jmp {}", label(o[0].imm));
    case Op::Ld:
      return fmt::format("ld{} {}, {}", ins.width == 2 ? ".h" : "", reg(o[0].reg), memory(o[1]));
    case Op::St:
      return fmt::format("st{} {}, {}", ins.width == 2 ? ".h" : "", memory(o[0]), reg(o[1].reg));
    case Op::Tsc:
      return fmt::format("tsc{} {}", ins.width ? ".hi" : "", reg(o[0].reg));
    case Op::Send:
      return fmt::format("send{} {}, {}", ins.control ? ".ctl" : "", o[0].imm, reg_or_imm(o[1]));
    case Op::Recv:
      return fmt::format("recv {}, {}", reg(o[0].reg), o[1].imm);
    case Op::Activate:
    case Op::Block:
    case Op::Unblock:
      return fmt::format("{} {}", mn, task_name(p, o[0].imm));
    case Op::DsdBase:
    case Op::DsdLen:
    case Op::DsdAdd:
    case Op::DsdStride:
    case Op::DsdColor:
      return fmt::format("{} {}, {}", mn, p.descriptors[static_cast<std::size_t>(o[0].imm)].name, reg_or_imm(o[1]));
    case Op::FCmp:
      return fmt::format("fcmp.{}.{} {}, {}, {}", hw::isa::cond_name(ins.cond), hw::name(ins.type), reg(o[0].reg),
                         reg(o[1].reg), reg(o[2].reg));
    default:
      break;
  }
  // Float instructions, scalar or vector.
  const bool reduction = hw::isa::is_reduction(ins.op);
  const int arity =
      ins.op == Op::FMac   ? 4
      : ins.op == Op::FDot ? 3
      : (ins.op == Op::FAdd || ins.op == Op::FSub || ins.op == Op::FMul || ins.op == Op::FMax || ins.op == Op::FMin)
          ? 3
          : 2;
  s = mn + types(ins);
  for (int k = 0; k < arity; ++k) {
    s += k == 0 ? " " : ", ";
    s += (k == 0 && reduction) ? reg(o[0].reg) : vec_operand(p, o[k]);
  }
  if (ins.async) s += ", async";
  if (ins.ut != hw::isa::Instruction::kUnordered) s += fmt::format(", ut={}", ins.ut);
  if (ins.on_done == hw::isa::OnDone::Activate) s += ", activate=" + task_name(p, ins.done_task);
  if (ins.on_done == hw::isa::OnDone::Unblock) s += ", unblock=" + task_name(p, ins.done_task);
  return s;
}

std::string disassemble(const std::vector<hw::isa::Placement>& placements) {
  std::string out;
  for (const auto& pl : placements) {
    const Program& p = *pl.program;
    auto range = [](unsigned a, unsigned b) { return a == b ? fmt::format("{}", a) : fmt::format("{}..{}", a, b); };
    out += fmt::format("; {}\n.pe {}, {}\n", p.file, range(pl.x0, pl.x1), range(pl.y0, pl.y1));
    for (std::size_t i = 0; i < p.data.size(); ++i) {
      const auto& d = p.data[i];
      const bool words = d.bytes.size() % 4 == 0 && d.addr % 4 == 0;
      const unsigned w = words ? 4 : 2;
      std::string line = fmt::format("{}.data init{}, {:#x}, {}", d.control ? "; control (steers branches)\n" : "", i,
                                     d.addr, words ? "u32" : "u16");
      for (std::size_t b = 0; b + w <= d.bytes.size(); b += w) {
        std::uint32_t v = 0;
        for (unsigned k = 0; k < w; ++k) v |= std::uint32_t{d.bytes[b + k]} << (8 * k);
        line += fmt::format(", {:#x}", v);
      }
      out += line + "\n";
    }
    for (const auto& d : p.descriptors) out += descriptor_line(d) + "\n";
    std::map<std::uint32_t, std::vector<std::string>> labels;
    for (const auto& t : p.tasks) {
      out += t.data ? fmt::format(".task {}, {}, color={}\n", t.name, t.id, t.color)
                    : fmt::format(".task {}, {}\n", t.name, t.id);
      labels[t.entry].push_back(t.name);
    }
    for (auto id : p.entry_tasks) out += fmt::format(".entry {}\n", p.task(id)->name);
    std::set<std::uint32_t> targets;
    for (const auto& ins : p.code) {
      if (ins.op == Op::Branch) targets.insert(static_cast<std::uint32_t>(ins.ops[2].imm));
      if (ins.op == Op::Jmp) targets.insert(static_cast<std::uint32_t>(ins.ops[0].imm));
    }
    for (auto t : targets) labels[t].push_back(fmt::format("L{}", t));
    for (std::uint32_t pc = 0; pc <= p.code.size(); ++pc) {
      auto it = labels.find(pc);
      if (it != labels.end())
        for (const auto& l : it->second) out += l + ":\n";
      if (pc < p.code.size()) out += "    " + instruction_text(p, pc) + "\n";
    }
    out += "\n";
  }
  return out;
}

}  // namespace wafersim::hw::isa

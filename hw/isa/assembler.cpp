#include "hw/isa/assembler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "hw/numerics/softfloat.h"
#include "sim/config/diagnostics.h"
#include "sim/config/input_file.h"
#include "sim/config/utf8.h"

namespace wafersim::hw::isa {
namespace {

using sim::config::Diagnostic;
using sim::config::Location;

struct Token {
  enum class Kind { Ident, Number, Punct };
  Kind kind;
  std::string text;
  int col;  // 1-based
};

// Thrown inside one line's parse to abandon the line; the diagnostic is already recorded.
struct LineError {};

std::string strip_comment(const std::string& line) {
  std::size_t cut = line.size();
  auto semi = line.find(';');
  if (semi != std::string::npos) cut = semi;
  auto slashes = line.find("//");
  if (slashes != std::string::npos && slashes < cut) cut = slashes;
  return line.substr(0, cut);
}

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

const std::vector<std::string>& mnemonic_list() {
  static const std::vector<std::string> list{
      "nop",       "mov",      "add",   "sub",     "mul",  "and",      "or",      "xor",     "shl",
      "shr",       "sra",      "cmp",   "beq",     "bne",  "blt",      "ble",     "bgt",     "bge",
      "bltu",      "bleu",     "bgtu",  "bgeu",    "jmp",  "ld",       "st",      "tsc",     "send",
      "recv",      "activate", "block", "unblock", "ret",  "dsd.base", "dsd.len", "dsd.add", "dsd.stride",
      "dsd.color", "fmov",     "fadd",  "fsub",    "fmul", "fmac",     "fmax",    "fmin",    "fneg",
      "fexp",      "frecip",   "fcvt",  "fcmp",    "fsum", "fdot",     "frmax",   "frmin"};
  return list;
}

std::optional<Cond> parse_cond(std::string_view s) {
  for (int c = 0; c <= static_cast<int>(Cond::Geu); ++c)
    if (cond_name(static_cast<Cond>(c)) == s) return static_cast<Cond>(c);
  return std::nullopt;
}

// One operand as written, before it is resolved against what the instruction expects.
struct RawOperand {
  std::vector<Token> tokens;
  int col = 0;
};

class Assembler {
 public:
  explicit Assembler(std::string file) : file_(std::move(file)) {}

  void run(std::string_view text) {
    std::istringstream in{std::string(text)};
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      line_ = n;
      source_line_ = line;
      try {
        process(strip_comment(line));
      } catch (const LineError&) {
      }
    }
    close_section();
    if (!diags_.empty()) throw sim::config::ConfigError(diags_);
  }

  std::vector<Placement> placements() { return std::move(placements_); }

 private:
  struct Fixup {
    std::size_t pc;
    int slot;
    std::string label;
    Location loc;
  };
  struct Section {
    Placement placement;
    Program prog;
    std::map<std::string, std::int64_t> symbols;
    std::map<std::string, std::uint32_t> labels;
    std::map<std::string, unsigned> dsds;
    std::map<std::string, unsigned> tasks;  // name -> index in prog.tasks
    std::vector<Fixup> fixups;
  };

  // ---- diagnostics ----
  Location at(int col) const { return Location{file_, line_, col}; }
  [[noreturn]] void fail(int col, const std::string& msg) {
    error(col, msg);
    throw LineError{};
  }
  void error(int col, const std::string& msg) { error_at(at(col), msg); }
  void error_at(const Location& loc, const std::string& msg) {
    if (diags_.size() < 200) diags_.push_back(Diagnostic{loc, "", msg});
  }

  // ---- lexing ----
  std::vector<Token> lex(const std::string& s) {
    std::vector<Token> out;
    std::size_t i = 0;
    while (i < s.size()) {
      const char c = s[i];
      const int col = static_cast<int>(i) + 1;
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        std::size_t j = i;
        if (c == '0' && j + 1 < s.size() && (s[j + 1] == 'x' || s[j + 1] == 'X')) {
          j += 2;
          while (j < s.size() && std::isxdigit(static_cast<unsigned char>(s[j]))) ++j;
        } else {
          while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
          if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
            ++j;
            while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
          }
          if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
            std::size_t k = j + 1;
            if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
            if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
              j = k;
              while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
            }
          }
        }
        if (j < s.size() && ident_char(s[j]) && s[j] != '.')
          fail(col, fmt::format("malformed number '{}'", s.substr(i, j - i + 1)));
        out.push_back({Token::Kind::Number, s.substr(i, j - i), col});
        i = j;
      } else if (c == '.' && i + 1 < s.size() && s[i + 1] == '.') {
        out.push_back({Token::Kind::Punct, "..", col});
        i += 2;
      } else if (ident_start(c)) {
        std::size_t j = i + 1;
        while (j < s.size() && ident_char(s[j])) {
          if (s[j] == '.' && j + 1 < s.size() && s[j + 1] == '.') break;
          ++j;
        }
        out.push_back({Token::Kind::Ident, s.substr(i, j - i), col});
        i = j;
      } else if (std::string_view(",[]+-*/()=:#").find(c) != std::string_view::npos) {
        out.push_back({Token::Kind::Punct, std::string(1, c), col});
        ++i;
      } else {
        fail(col, fmt::format("unexpected character '{}'", c));
      }
    }
    return out;
  }

  // ---- expressions ----
  class Cursor {
   public:
    Cursor(const std::vector<Token>& t, int end_col) : t_(t), end_col_(end_col) {}
    [[nodiscard]] bool done() const { return i_ >= t_.size(); }
    [[nodiscard]] const Token* peek() const { return done() ? nullptr : &t_[i_]; }
    const Token& next() { return t_[i_++]; }
    [[nodiscard]] bool is(std::string_view punct) const {
      return !done() && t_[i_].kind == Token::Kind::Punct && t_[i_].text == punct;
    }
    [[nodiscard]] int col() const { return done() ? end_col_ : t_[i_].col; }

   private:
    const std::vector<Token>& t_;
    std::size_t i_ = 0;
    int end_col_;
  };

  std::optional<std::int64_t> lookup(const std::string& name) const {
    if (section_) {
      auto it = section_->symbols.find(name);
      if (it != section_->symbols.end()) return it->second;
    }
    auto g = globals_.find(name);
    if (g != globals_.end()) return g->second;
    return std::nullopt;
  }

  std::int64_t parse_integer_token(const Token& t) {
    if (t.text.find_first_of(".eE") != std::string::npos && t.text.rfind("0x", 0) != 0 && t.text.rfind("0X", 0) != 0)
      fail(t.col, fmt::format("expected an integer, found '{}'", t.text));
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(t.text.c_str(), &end, 0);
    if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX))
      fail(t.col, fmt::format("integer '{}' is too large", t.text));
    return static_cast<std::int64_t>(v);
  }

  std::int64_t primary(Cursor& c) {
    if (c.done()) fail(c.col(), "expected a value");
    const Token& t = c.next();
    if (t.kind == Token::Kind::Number) return parse_integer_token(t);
    if (t.kind == Token::Kind::Ident) {
      if (auto v = lookup(t.text)) return *v;
      if (is_register(t.text)) fail(t.col, fmt::format("expected a constant, found register '{}'", t.text));
      fail(t.col,
           fmt::format("undefined symbol '{}' (constants are defined with .equ, .data or .fill before use)", t.text));
    }
    if (t.text == "(") {
      std::int64_t v = expr(c);
      if (!c.is(")")) fail(c.col(), "expected ')'");
      c.next();
      return v;
    }
    if (t.text == "-") return -primary(c);
    if (t.text == "+") return primary(c);
    fail(t.col, fmt::format("expected a value, found '{}'", t.text));
  }

  std::int64_t term(Cursor& c) {
    std::int64_t v = primary(c);
    while (c.is("*") || c.is("/")) {
      const Token& op = c.next();
      std::int64_t r = primary(c);
      if (op.text == "*") {
        v *= r;
      } else {
        if (r == 0) fail(op.col, "division by zero");
        v /= r;
      }
    }
    return v;
  }

  std::int64_t expr(Cursor& c) {
    std::int64_t v = term(c);
    while (c.is("+") || c.is("-")) {
      const Token& op = c.next();
      std::int64_t r = term(c);
      v = op.text == "+" ? v + r : v - r;
    }
    return v;
  }

  // A whole operand as one integer expression.
  std::int64_t value(const RawOperand& o, std::int64_t lo, std::int64_t hi, std::string_view what) {
    Cursor c(o.tokens, o.col);
    std::int64_t v = expr(c);
    if (!c.done()) fail(c.col(), fmt::format("unexpected '{}' after {}", c.peek()->text, what));
    if (v < lo || v > hi) fail(o.col, fmt::format("{} {} is out of range {} .. {}", what, v, lo, hi));
    return v;
  }

  // A float literal rounded to `t`: [+|-] number | inf | nan, or #RAW for a bit pattern.
  std::uint32_t float_literal(const RawOperand& o, DType t) {
    const auto& tk = o.tokens;
    std::size_t i = 0;
    bool negative = false;
    if (i < tk.size() && tk[i].kind == Token::Kind::Punct && tk[i].text == "#") {
      if (tk.size() != 2 || tk[1].kind != Token::Kind::Number)
        fail(o.col, "expected a raw bit pattern such as #0x7e00");
      const std::int64_t raw = parse_integer_token(tk[1]);
      const std::int64_t limit = size_of(t) == 4 ? 0xffffffffLL : 0xffffLL;
      if (raw > limit) fail(tk[1].col, fmt::format("bit pattern {} does not fit {}", tk[1].text, name(t)));
      return static_cast<std::uint32_t>(raw);
    }
    if (i < tk.size() && tk[i].kind == Token::Kind::Punct && (tk[i].text == "-" || tk[i].text == "+")) {
      negative = tk[i].text == "-";
      ++i;
    }
    if (i + 1 != tk.size())
      fail(o.col, fmt::format("expected a {} number such as 1.5, -0.25, inf or #0x3c00", name(t)));
    const Token& n = tk[i];
    double v = 0;
    if (n.kind == Token::Kind::Ident && (n.text == "inf" || n.text == "nan")) {
      v = n.text == "inf" ? HUGE_VAL : std::nan("");
    } else if (n.kind == Token::Kind::Number) {
      char* end = nullptr;
      v = std::strtod(n.text.c_str(), &end);
    } else if (auto sym = lookup(n.text); n.kind == Token::Kind::Ident && sym) {
      v = static_cast<double>(*sym);
    } else {
      fail(n.col, fmt::format("expected a {} number, found '{}'", name(t), n.text));
    }
    if (std::isnan(v)) return numerics::default_nan(t) | (negative ? (size_of(t) == 4 ? 0x80000000u : 0x8000u) : 0u);
    return numerics::from_double(t, negative ? -v : v);
  }

  static bool is_register(const std::string& s) {
    if (s.size() < 2 || s.size() > 3 || s[0] != 'r') return false;
    for (std::size_t i = 1; i < s.size(); ++i)
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    return std::stoi(s.substr(1)) < static_cast<int>(kRegisters) && !(s.size() == 3 && s[1] == '0');
  }

  // ---- operand kinds ----
  static bool single_ident(const RawOperand& o) {
    return o.tokens.size() == 1 && o.tokens[0].kind == Token::Kind::Ident;
  }

  bool is_reg(const RawOperand& o) const { return single_ident(o) && is_register(o.tokens[0].text); }
  bool is_dsd(const RawOperand& o) const { return single_ident(o) && section_->dsds.count(o.tokens[0].text); }

  std::uint8_t reg(const RawOperand& o) {
    if (!is_reg(o)) {
      if (single_ident(o) && o.tokens[0].text.size() > 1 && o.tokens[0].text[0] == 'r' &&
          std::isdigit(static_cast<unsigned char>(o.tokens[0].text[1])))
        fail(o.col, fmt::format("no register '{}': registers are r0 .. r{}", o.tokens[0].text, kRegisters - 1));
      fail(o.col, fmt::format("expected a register (r0 .. r{}), found '{}'", kRegisters - 1, text_of(o)));
    }
    return static_cast<std::uint8_t>(std::stoi(o.tokens[0].text.substr(1)));
  }

  Operand reg_or_imm(const RawOperand& o) {
    if (is_reg(o)) return Operand::r(reg(o));
    return Operand::i(value(o, INT32_MIN, UINT32_MAX, "immediate"));
  }

  unsigned dsd(const RawOperand& o) {
    if (!is_dsd(o)) {
      std::vector<std::string> names;
      for (const auto& [n, _] : section_->dsds) names.push_back(n);
      std::string hint;
      if (single_ident(o)) {
        auto best = sim::config::closest_match(o.tokens[0].text, names);
        if (!best.empty()) hint = fmt::format("; did you mean '{}'?", best);
      }
      fail(o.col, fmt::format("expected a descriptor declared with .dsd, found '{}'{}", text_of(o), hint));
    }
    return section_->dsds.at(o.tokens[0].text);
  }

  std::uint8_t task(const RawOperand& o) {
    if (!single_ident(o) || !section_->tasks.count(o.tokens[0].text))
      fail(o.col, fmt::format("expected a task declared with .task, found '{}'", text_of(o)));
    return section_->prog.tasks[section_->tasks.at(o.tokens[0].text)].id;
  }

  Operand memory(const RawOperand& o) {
    const auto& t = o.tokens;
    if (t.size() < 3 || t.front().text != "[" || t.back().text != "]")
      fail(o.col, fmt::format("expected a memory operand such as [r1 + 8] or [0x100], found '{}'", text_of(o)));
    std::vector<Token> inner(t.begin() + 1, t.end() - 1);
    RawOperand in{inner, inner.front().col};
    if (!inner.empty() && inner[0].kind == Token::Kind::Ident && is_register(inner[0].text)) {
      const auto base = static_cast<std::uint8_t>(std::stoi(inner[0].text.substr(1)));
      if (inner.size() == 1) return Operand::mem(base, 0);
      if (inner[1].text != "+" && inner[1].text != "-")
        fail(inner[1].col, fmt::format("expected '+' or '-' after the base register, found '{}'", inner[1].text));
      RawOperand off{std::vector<Token>(inner.begin() + 1, inner.end()), inner[1].col};
      return Operand::mem(base, value(off, -65536, 65535, "offset"));
    }
    return Operand::mem(Operand::kNoBase, value(in, 0, UINT32_MAX, "address"));
  }

  static std::string text_of(const RawOperand& o) {
    std::string s;
    for (const auto& t : o.tokens) {
      if (!s.empty() && t.kind != Token::Kind::Punct && s.back() != '[' && s.back() != '-') s += ' ';
      s += t.text;
    }
    return s;
  }

  // ---- sections ----
  void open_section(const Location& loc, std::uint16_t x0, std::uint16_t x1, std::uint16_t y0, std::uint16_t y1) {
    close_section();
    sections_.emplace_back();
    section_ = &sections_.back();
    section_->placement = Placement{x0, x1, y0, y1, nullptr, loc};
    section_->prog.file = file_;
  }

  void ensure_section() {
    if (!section_) open_section(Location{file_, line_, 1}, 0, 0, 0, 0);
  }

  void close_section() {
    if (!section_) return;
    Section& s = *section_;
    for (const auto& f : s.fixups) {
      auto it = s.labels.find(f.label);
      if (it == s.labels.end()) {
        std::vector<std::string> names;
        for (const auto& [n, _] : s.labels) names.push_back(n);
        auto best = sim::config::closest_match(f.label, names);
        error_at(f.loc,
                 fmt::format("undefined label '{}'{}", f.label, best.empty() ? "" : "; did you mean '" + best + "'?"));
        continue;
      }
      s.prog.code[f.pc].ops[f.slot].imm = it->second;
    }
    for (auto& t : s.prog.tasks) {
      auto it = s.labels.find(t.name);
      if (it == s.labels.end())
        error_at(t.location, fmt::format("task '{}' has no code: add the label '{}:' before its first instruction",
                                         t.name, t.name));
      else
        t.entry = it->second;
    }
    std::sort(s.prog.tasks.begin(), s.prog.tasks.end(),
              [](const TaskDecl& a, const TaskDecl& b) { return a.id < b.id; });
    for (const auto& p : placements_) {
      const auto& a = p;
      const auto& b = s.placement;
      if (a.x0 <= b.x1 && b.x0 <= a.x1 && a.y0 <= b.y1 && b.y0 <= a.y1)
        error_at(b.location, fmt::format("PEs of this section already have a program from {}", a.location.str()));
    }
    s.placement.program = std::make_shared<const Program>(std::move(s.prog));
    placements_.push_back(std::move(s.placement));
    section_ = nullptr;
  }

  // ---- lines ----
  void process(const std::string& line) {
    std::vector<Token> t = lex(line);
    std::size_t i = 0;
    if (t.size() >= 2 && t[0].kind == Token::Kind::Ident && t[1].text == ":" && t[0].text[0] != '.') {
      ensure_section();
      if (is_register(t[0].text)) fail(t[0].col, fmt::format("'{}' is a register name, not a label", t[0].text));
      if (section_->labels.count(t[0].text)) fail(t[0].col, fmt::format("label '{}' is defined twice", t[0].text));
      section_->labels[t[0].text] = static_cast<std::uint32_t>(section_->prog.code.size());
      i = 2;
    }
    if (i >= t.size()) return;
    if (t[i].kind != Token::Kind::Ident)
      fail(t[i].col, fmt::format("expected an instruction or directive, found '{}'", t[i].text));
    const Token head = t[i];
    std::vector<RawOperand> ops = split(t, i + 1, static_cast<int>(line.size()) + 1);
    if (head.text[0] == '.')
      directive(head, ops);
    else
      instruction(head, ops);
  }

  std::vector<RawOperand> split(const std::vector<Token>& t, std::size_t from, int end_col) {
    std::vector<RawOperand> out;
    if (from >= t.size()) return out;
    RawOperand cur;
    cur.col = t[from].col;
    int depth = 0;
    for (std::size_t i = from; i < t.size(); ++i) {
      if (t[i].kind == Token::Kind::Punct && (t[i].text == "[" || t[i].text == "(")) ++depth;
      if (t[i].kind == Token::Kind::Punct && (t[i].text == "]" || t[i].text == ")")) --depth;
      if (depth == 0 && t[i].kind == Token::Kind::Punct && t[i].text == ",") {
        if (cur.tokens.empty()) fail(t[i].col, "empty operand");
        out.push_back(cur);
        cur = RawOperand{};
        cur.col = i + 1 < t.size() ? t[i + 1].col : end_col;
        continue;
      }
      cur.tokens.push_back(t[i]);
    }
    if (depth != 0) fail(cur.col, "unbalanced brackets");
    if (cur.tokens.empty()) fail(cur.col, "expected an operand after ','");
    out.push_back(cur);
    return out;
  }

  void need(const Token& head, const std::vector<RawOperand>& ops, std::size_t lo, std::size_t hi, const char* form) {
    if (ops.size() < lo)
      fail(ops.empty() ? head.col + static_cast<int>(head.text.size()) + 1 : ops.back().col,
           fmt::format("'{}' takes {}: expected {}", head.text,
                       lo == hi ? fmt::format("{} operand{}", lo, lo == 1 ? "" : "s")
                                : fmt::format("{} to {} operands", lo, hi),
                       form));
    if (ops.size() > hi) fail(ops[hi].col, fmt::format("too many operands for '{}': expected {}", head.text, form));
  }

  std::string name_of(const RawOperand& o, const char* what) {
    if (!single_ident(o) || o.tokens[0].text[0] == '.')
      fail(o.col, fmt::format("expected a {} name, found '{}'", what, text_of(o)));
    const std::string& n = o.tokens[0].text;
    if (is_register(n)) fail(o.col, fmt::format("'{}' is a register name", n));
    return n;
  }

  // key=value operand: returns key and the value's tokens.
  static bool key_value(const RawOperand& o, std::string* key, RawOperand* val) {
    if (o.tokens.size() < 3 || o.tokens[0].kind != Token::Kind::Ident || o.tokens[1].text != "=") return false;
    *key = o.tokens[0].text;
    *val = RawOperand{std::vector<Token>(o.tokens.begin() + 2, o.tokens.end()), o.tokens[2].col};
    return true;
  }

  void directive(const Token& head, const std::vector<RawOperand>& ops) {
    const std::string& d = head.text;
    if (d == ".equ") {
      need(head, ops, 2, 2, ".equ NAME, VALUE");
      const std::string n = name_of(ops[0], "constant");
      const std::int64_t v = value(ops[1], INT64_MIN / 2, INT64_MAX / 2, "value");
      auto& table = section_ ? section_->symbols : globals_;
      if (table.count(n)) fail(ops[0].col, fmt::format("'{}' is defined twice", n));
      table[n] = v;
    } else if (d == ".pe") {
      need(head, ops, 2, 2, ".pe X, Y (each a number or a range A..B)");
      auto range = [&](const RawOperand& o, const char* axis) {
        std::vector<Token> lo, hi;
        bool dots = false;
        for (const auto& t : o.tokens) {
          if (t.kind == Token::Kind::Punct && t.text == "..") {
            if (dots) fail(t.col, "expected one '..'");
            dots = true;
            continue;
          }
          (dots ? hi : lo).push_back(t);
        }
        if (lo.empty() || (dots && hi.empty())) fail(o.col, fmt::format("expected {} or a range A..B", axis));
        auto a = value(RawOperand{lo, lo[0].col}, 0, 65535, axis);
        auto b = dots ? value(RawOperand{hi, hi[0].col}, 0, 65535, axis) : a;
        if (b < a) fail(o.col, fmt::format("empty range {}..{}", a, b));
        return std::pair<std::uint16_t, std::uint16_t>(static_cast<std::uint16_t>(a), static_cast<std::uint16_t>(b));
      };
      auto [x0, x1] = range(ops[0], "x");
      auto [y0, y1] = range(ops[1], "y");
      open_section(at(head.col), x0, x1, y0, y1);
    } else if (d == ".data" || d == ".fill") {
      ensure_section();
      const bool fill = d == ".fill";
      if (fill)
        need(head, ops, 5, 5, ".fill NAME, ADDRESS, TYPE, COUNT, VALUE");
      else
        need(head, ops, 3, 1u << 20, ".data NAME, ADDRESS, TYPE, VALUE, ...");
      const std::string n = name_of(ops[0], "data");
      const std::int64_t addr = value(ops[1], 0, UINT32_MAX, "address");
      const DType t = dtype(ops[2]);
      if (addr % size_of(t))
        fail(ops[1].col, fmt::format("address {} is not aligned to {} bytes for {}", addr, size_of(t), name(t)));
      DataInit init;
      init.addr = static_cast<std::uint32_t>(addr);
      init.location = at(head.col);
      auto element = [&](const RawOperand& o) -> std::uint32_t {
        if (is_float(t)) return float_literal(o, t);
        return static_cast<std::uint32_t>(
            value(o, t == DType::U16 ? -32768 : INT32_MIN, t == DType::U16 ? 65535 : UINT32_MAX, "value"));
      };
      auto push = [&](std::uint32_t v) {
        for (unsigned b = 0; b < size_of(t); ++b) init.bytes.push_back(static_cast<std::uint8_t>(v >> (8 * b)));
      };
      if (fill) {
        const std::int64_t count = value(ops[3], 0, 1 << 24, "count");
        const std::uint32_t v = element(ops[4]);
        for (std::int64_t k = 0; k < count; ++k) push(v);
      } else {
        for (std::size_t k = 3; k < ops.size(); ++k) push(element(ops[k]));
      }
      if (section_->symbols.count(n)) fail(ops[0].col, fmt::format("'{}' is defined twice", n));
      section_->symbols[n] = addr;
      section_->prog.data.push_back(std::move(init));
    } else if (d == ".dsd") {
      ensure_section();
      need(head, ops, 3, 16, ".dsd NAME, mem|circ|fabin|fabout, TYPE, key=value, ...");
      descriptor(ops);
    } else if (d == ".task") {
      ensure_section();
      need(head, ops, 2, 3, ".task NAME, ID [, color=C]");
      const std::string n = name_of(ops[0], "task");
      TaskDecl td;
      td.name = n;
      td.id = static_cast<std::uint8_t>(value(ops[1], 0, kMaxTasks - 1, "task id"));
      td.location = at(head.col);
      if (ops.size() == 3) {
        std::string key;
        RawOperand val;
        if (!key_value(ops[2], &key, &val) || key != "color")
          fail(ops[2].col, fmt::format("expected color=C for a data task, found '{}'", text_of(ops[2])));
        td.data = true;
        td.color = static_cast<std::uint8_t>(value(val, 0, 63, "color"));
        for (const auto& o : section_->prog.tasks)
          if (o.data && o.color == td.color)
            fail(val.col, fmt::format("color {} already activates task '{}'", td.color, o.name));
      }
      if (section_->tasks.count(n)) fail(ops[0].col, fmt::format("task '{}' is declared twice", n));
      for (const auto& o : section_->prog.tasks)
        if (o.id == td.id) fail(ops[1].col, fmt::format("task id {} is already task '{}'", td.id, o.name));
      section_->tasks[n] = static_cast<unsigned>(section_->prog.tasks.size());
      section_->prog.tasks.push_back(td);
    } else if (d == ".entry") {
      ensure_section();
      need(head, ops, 1, 1, ".entry TASK");
      const std::uint8_t id = task(ops[0]);
      if (section_->prog.task(id)->data) fail(ops[0].col, "a data task is activated by wavelets, not by .entry");
      section_->prog.entry_tasks.push_back(id);
    } else {
      static const std::vector<std::string> known{".equ", ".pe", ".data", ".fill", ".dsd", ".task", ".entry"};
      auto best = sim::config::closest_match(d, known);
      fail(head.col, fmt::format("unknown directive '{}'{}", d, best.empty() ? "" : "; did you mean '" + best + "'?"));
    }
  }

  DType dtype(const RawOperand& o) {
    if (single_ident(o))
      if (auto t = parse_dtype(o.tokens[0].text)) return *t;
    fail(o.col, fmt::format("expected a type (f16, bf16, f32, u16, u32), found '{}'", text_of(o)));
  }

  void descriptor(const std::vector<RawOperand>& ops) {
    const std::string n = name_of(ops[0], "descriptor");
    DescriptorDecl dd;
    dd.name = n;
    dd.location = at(ops[0].col);
    Descriptor& x = dd.init;
    const std::string kind = single_ident(ops[1]) ? ops[1].tokens[0].text : text_of(ops[1]);
    std::vector<std::string> keys;
    if (kind == "mem") {
      x.kind = Descriptor::Kind::Mem;
      keys = {"base", "len", "stride"};
    } else if (kind == "circ") {
      x.kind = Descriptor::Kind::Circ;
      keys = {"base", "len", "size", "start"};
    } else if (kind == "fabin") {
      x.kind = Descriptor::Kind::FabIn;
      keys = {"color", "len", "repeat", "sparse"};
    } else if (kind == "fabout") {
      x.kind = Descriptor::Kind::FabOut;
      keys = {"color", "len"};
    } else {
      fail(ops[1].col, fmt::format("expected a descriptor kind (mem, circ, fabin, fabout), found '{}'", kind));
    }
    x.dtype = dtype(ops[2]);
    std::map<std::string, bool> seen;
    for (std::size_t k = 3; k < ops.size(); ++k) {
      std::string key;
      RawOperand val;
      if (single_ident(ops[k]) && ops[k].tokens[0].text == "sparse" && x.kind == Descriptor::Kind::FabIn) {
        x.sparse = true;
        continue;
      }
      if (!key_value(ops[k], &key, &val))
        fail(ops[k].col, fmt::format("expected key=value, found '{}'", text_of(ops[k])));
      if (std::find(keys.begin(), keys.end(), key) == keys.end() || key == "sparse") {
        auto best = sim::config::closest_match(key, keys);
        fail(ops[k].col, fmt::format("unknown key '{}' for a {} descriptor{}", key, kind,
                                     best.empty() ? "" : "; did you mean '" + best + "'?"));
      }
      if (seen[key]) fail(ops[k].col, fmt::format("key '{}' is given twice", key));
      seen[key] = true;
      if (key == "base") {
        const auto b = value(val, 0, UINT32_MAX, "base address");
        if (b % size_of(x.dtype))
          fail(val.col,
               fmt::format("base address {} is not aligned to {} bytes for {}", b, size_of(x.dtype), name(x.dtype)));
        x.base = static_cast<std::uint32_t>(b);
      } else if (key == "len") {
        x.length = static_cast<std::uint32_t>(value(val, 0, UINT32_MAX, "length"));
      } else if (key == "stride") {
        x.stride = static_cast<std::int32_t>(value(val, INT32_MIN, INT32_MAX, "stride"));
      } else if (key == "size") {
        x.size = static_cast<std::uint32_t>(value(val, 1, UINT32_MAX, "size"));
      } else if (key == "start") {
        x.start = static_cast<std::uint32_t>(value(val, 0, UINT32_MAX, "start"));
      } else if (key == "repeat") {
        x.repeat = static_cast<std::uint32_t>(value(val, 1, 65535, "repeat"));
      } else if (key == "color") {
        x.color = static_cast<std::uint8_t>(value(val, 0, 63, "color"));
      }
    }
    for (const auto& k : keys) {
      const bool optional = k == "stride" || k == "start" || k == "sparse" || k == "repeat";
      if (!optional && !seen[k]) fail(ops[0].col, fmt::format("{} descriptor '{}' needs {}=", kind, n, k));
    }
    if (x.kind == Descriptor::Kind::Circ && x.start >= x.size)
      fail(ops[0].col, fmt::format("start {} must be below the buffer size {}", x.start, x.size));
    if (x.sparse && x.repeat > 1)
      fail(ops[0].col, "a sparse stream indexes memory by each wavelet: it cannot repeat wavelets");
    if (x.sparse && size_of(x.dtype) != 2)
      fail(ops[2].col, "a sparse stream carries (16-bit index, 16-bit value): its type must be f16, bf16 or u16");
    if (section_->dsds.count(n)) fail(ops[0].col, fmt::format("descriptor '{}' is declared twice", n));
    section_->dsds[n] = static_cast<unsigned>(section_->prog.descriptors.size());
    section_->prog.descriptors.push_back(std::move(dd));
  }

  // ---- instructions ----
  void instruction(const Token& head, std::vector<RawOperand> ops) {
    ensure_section();
    Section& s = *section_;
    Instruction ins;
    std::vector<std::string> parts;
    {
      std::string p;
      std::istringstream ss(head.text);
      while (std::getline(ss, p, '.')) parts.push_back(p);
    }
    const std::string base = parts.empty() ? head.text : parts[0];
    auto suffix_count = [&](std::size_t lo, std::size_t hi, const char* form) {
      if (parts.size() - 1 < lo || parts.size() - 1 > hi) fail(head.col, fmt::format("expected {}", form));
    };
    auto float_type = [&](const std::string& p) {
      auto t = parse_dtype(p);
      if (!t || !is_float(*t))
        fail(head.col,
             fmt::format("'{}': expected a float type suffix (.f16, .bf16, .f32), found '.{}'", head.text, p));
      return *t;
    };
    trailing_options(ops, ins);
    const std::size_t pc = s.prog.code.size();
    auto label_operand = [&](int slot, const RawOperand& o) {
      if (!single_ident(o) || is_register(o.tokens[0].text))
        fail(o.col, fmt::format("expected a label, found '{}'", text_of(o)));
      s.fixups.push_back({pc, slot, o.tokens[0].text, at(o.col)});
      ins.ops[slot] = Operand::i(0);
    };
    auto scalar_only = [&]() { require_scalar(head, ins); };

    static const std::map<std::string, Op> alu{{"add", Op::Add}, {"sub", Op::Sub}, {"mul", Op::Mul},
                                               {"and", Op::And}, {"or", Op::Or},   {"xor", Op::Xor},
                                               {"shl", Op::Shl}, {"shr", Op::Shr}, {"sra", Op::Sra}};
    static const std::map<std::string, Op> fbin{
        {"fadd", Op::FAdd}, {"fsub", Op::FSub}, {"fmul", Op::FMul}, {"fmax", Op::FMax}, {"fmin", Op::FMin}};
    static const std::map<std::string, Op> funary{
        {"fmov", Op::FMov}, {"fneg", Op::FNeg}, {"fexp", Op::FExp}, {"frecip", Op::FRecip}};
    static const std::map<std::string, Op> fred{{"fsum", Op::FSum}, {"frmax", Op::FRMax}, {"frmin", Op::FRMin}};

    if (base == "nop" || base == "ret") {
      suffix_count(0, 0, "no type suffix");
      need(head, ops, 0, 0, "no operands");
      scalar_only();
      ins.op = base == "nop" ? Op::Nop : Op::Ret;
    } else if (base == "mov") {
      suffix_count(0, 1, "mov or mov.TYPE");
      need(head, ops, 2, 2, "mov rD, rS|VALUE");
      scalar_only();
      ins.op = Op::Mov;
      ins.ops[0] = Operand::r(reg(ops[0]));
      if (parts.size() == 2) {
        ins.type = float_type(parts[1]);
        ins.ops[1] = Operand::i(float_literal(ops[1], ins.type));
      } else {
        ins.ops[1] = reg_or_imm(ops[1]);
      }
    } else if (alu.count(base)) {
      suffix_count(0, 0, "no type suffix (integer ALU)");
      need(head, ops, 3, 3, fmt::format("{} rD, rA, rB|VALUE", base).c_str());
      scalar_only();
      ins.op = alu.at(base);
      ins.ops[0] = Operand::r(reg(ops[0]));
      ins.ops[1] = Operand::r(reg(ops[1]));
      ins.ops[2] = reg_or_imm(ops[2]);
    } else if (base == "cmp") {
      suffix_count(1, 1, "cmp.COND (eq, ne, lt, le, gt, ge, ltu, leu, gtu, geu)");
      auto c = parse_cond(parts[1]);
      if (!c)
        fail(head.col, fmt::format("unknown condition '.{}' (eq, ne, lt, le, gt, ge, ltu, leu, gtu, geu)", parts[1]));
      need(head, ops, 3, 3, "cmp.COND rD, rA, rB|VALUE");
      scalar_only();
      ins.op = Op::Cmp;
      ins.cond = *c;
      ins.ops[0] = Operand::r(reg(ops[0]));
      ins.ops[1] = Operand::r(reg(ops[1]));
      ins.ops[2] = reg_or_imm(ops[2]);
    } else if (base.size() >= 3 && base[0] == 'b' && parse_cond(base.substr(1)) && parts.size() == 1) {
      need(head, ops, 3, 3, fmt::format("{} rA, rB|VALUE, LABEL", base).c_str());
      scalar_only();
      ins.op = Op::Branch;
      ins.cond = *parse_cond(base.substr(1));
      ins.ops[0] = Operand::r(reg(ops[0]));
      ins.ops[1] = reg_or_imm(ops[1]);
      label_operand(2, ops[2]);
    } else if (base == "jmp") {
      need(head, ops, 1, 1, "jmp LABEL");
      scalar_only();
      ins.op = Op::Jmp;
      label_operand(0, ops[0]);
    } else if (base == "ld" || base == "st") {
      suffix_count(0, 1, fmt::format("{} or {}.h", base, base).c_str());
      if (parts.size() == 2 && parts[1] != "h")
        fail(head.col, fmt::format("unknown suffix '.{}': expected .h (16 bits)", parts[1]));
      ins.width = parts.size() == 2 ? 2 : 4;
      scalar_only();
      if (base == "ld") {
        need(head, ops, 2, 2, "ld rD, [rA + OFFSET]");
        ins.op = Op::Ld;
        ins.ops[0] = Operand::r(reg(ops[0]));
        ins.ops[1] = memory(ops[1]);
      } else {
        need(head, ops, 2, 2, "st [rA + OFFSET], rS");
        ins.op = Op::St;
        ins.ops[0] = memory(ops[0]);
        ins.ops[1] = Operand::r(reg(ops[1]));
      }
    } else if (base == "tsc") {
      suffix_count(0, 1, "tsc or tsc.hi");
      if (parts.size() == 2 && parts[1] != "hi")
        fail(head.col, fmt::format("unknown suffix '.{}': expected .hi", parts[1]));
      need(head, ops, 1, 1, "tsc rD");
      scalar_only();
      ins.op = Op::Tsc;
      ins.width = parts.size() == 2 ? 1 : 0;
      ins.ops[0] = Operand::r(reg(ops[0]));
    } else if (base == "send") {
      suffix_count(0, 1, "send or send.ctl");
      if (parts.size() == 2 && parts[1] != "ctl")
        fail(head.col, fmt::format("unknown suffix '.{}': expected .ctl", parts[1]));
      need(head, ops, 2, 2, "send COLOR, rS|VALUE");
      scalar_only();
      ins.op = Op::Send;
      ins.control = parts.size() == 2;
      ins.ops[0] = Operand::i(value(ops[0], 0, 63, "color"));
      ins.ops[1] = reg_or_imm(ops[1]);
    } else if (base == "recv") {
      need(head, ops, 2, 2, "recv rD, COLOR");
      scalar_only();
      ins.op = Op::Recv;
      ins.ops[0] = Operand::r(reg(ops[0]));
      ins.ops[1] = Operand::i(value(ops[1], 0, 63, "color"));
    } else if (base == "activate" || base == "block" || base == "unblock") {
      need(head, ops, 1, 1, fmt::format("{} TASK", base).c_str());
      scalar_only();
      ins.op = base == "activate" ? Op::Activate : base == "block" ? Op::Block : Op::Unblock;
      ins.ops[0] = Operand::task(task(ops[0]));
      if (ins.op == Op::Activate && s.prog.task(static_cast<std::uint8_t>(ins.ops[0].imm))->data)
        fail(ops[0].col, "a data task is activated by wavelets, not by activate");
    } else if (base == "dsd") {
      descriptor_field(head, parts, ops, ins);
    } else if (base == "fcmp") {
      suffix_count(2, 2, "fcmp.COND.TYPE");
      auto c = parse_cond(parts[1]);
      if (!c || *c > Cond::Ge)
        fail(head.col, fmt::format("unknown condition '.{}' (eq, ne, lt, le, gt, ge)", parts[1]));
      ins.op = Op::FCmp;
      ins.cond = *c;
      ins.type = ins.type2 = float_type(parts[2]);
      need(head, ops, 3, 3, "fcmp.COND.TYPE rD, rA, rB");
      scalar_only();
      for (int k = 0; k < 3; ++k) ins.ops[k] = Operand::r(reg(ops[static_cast<std::size_t>(k)]));
    } else if (fbin.count(base) || funary.count(base) || base == "fmac" || base == "fcvt" || fred.count(base) ||
               base == "fdot") {
      float_instruction(head, base, parts, ops, ins);
    } else {
      auto best = sim::config::closest_match(head.text, mnemonic_list());
      if (best.empty() && parts.size() > 1) best = sim::config::closest_match(base, mnemonic_list());
      fail(head.col,
           fmt::format("unknown instruction '{}'{}", head.text, best.empty() ? "" : "; did you mean '" + best + "'?"));
    }
    s.prog.code.push_back(ins);
    s.prog.where.push_back(at(head.col));
    s.prog.text.push_back(instruction_text());
  }

  // The source line's instruction as written: no label, no comment, no surrounding blanks.
  [[nodiscard]] std::string instruction_text() const {
    std::string text = source_line_;
    auto semi = strip_comment(text);
    auto first = semi.find_first_not_of(" \t");
    auto last = semi.find_last_not_of(" \t\r");
    text = first == std::string::npos ? "" : semi.substr(first, last - first + 1);
    auto colon = text.find(':');
    if (colon != std::string::npos && colon < text.find(' '))
      text = text.substr(text.find_first_not_of(" \t", colon + 1));
    return text;
  }

  // Takes the trailing options of a vector instruction off `ops`: async, activate=/unblock=
  // TASK, ut=N.
  void trailing_options(std::vector<RawOperand>& ops, Instruction& ins) {
    while (!ops.empty()) {
      std::string key;
      RawOperand val;
      if (single_ident(ops.back()) && ops.back().tokens[0].text == "async") {
        ins.async = true;
      } else if (key_value(ops.back(), &key, &val) && (key == "activate" || key == "unblock")) {
        if (ins.on_done != OnDone::None) fail(ops.back().col, "only one completion action (activate= or unblock=)");
        ins.on_done = key == "activate" ? OnDone::Activate : OnDone::Unblock;
        ins.done_task = task(val);
      } else if (key_value(ops.back(), &key, &val) && key == "ut") {
        if (ins.ut != Instruction::kUnordered) fail(ops.back().col, "only one microthread (ut=)");
        ins.ut = static_cast<std::uint8_t>(value(val, 0, 63, "microthread"));
      } else {
        break;
      }
      ops.pop_back();
    }
  }

  void require_scalar(const Token& head, const Instruction& ins) {
    if (ins.async || ins.on_done != OnDone::None || ins.ut != Instruction::kUnordered)
      fail(head.col, fmt::format("'{}' cannot be async", head.text));
  }

  // dsd.FIELD DESCRIPTOR, rS|VALUE: a descriptor field set or moved at run time.
  void descriptor_field(const Token& head, const std::vector<std::string>& parts, const std::vector<RawOperand>& ops,
                        Instruction& ins) {
    Section& s = *section_;
    if (parts.size() != 2) fail(head.col, "expected dsd.base, dsd.len, dsd.add, dsd.stride or dsd.color");
    static const std::map<std::string, Op> f{{"base", Op::DsdBase},
                                             {"len", Op::DsdLen},
                                             {"add", Op::DsdAdd},
                                             {"stride", Op::DsdStride},
                                             {"color", Op::DsdColor}};
    if (!f.count(parts[1]))
      fail(head.col, fmt::format("unknown descriptor field '.{}' (base, len, add, stride, color)", parts[1]));
    need(head, ops, 2, 2, fmt::format("{} DESCRIPTOR, rS|VALUE", head.text).c_str());
    require_scalar(head, ins);
    ins.op = f.at(parts[1]);
    ins.ops[0] = Operand::dsd(dsd(ops[0]));
    ins.ops[1] = reg_or_imm(ops[1]);
    const Descriptor& d = s.prog.descriptors[static_cast<std::size_t>(ins.ops[0].imm)].init;
    const bool mem = d.is_memory();
    if ((ins.op == Op::DsdBase || ins.op == Op::DsdStride) && !mem)
      fail(ops[0].col, fmt::format("'{}' applies to memory descriptors; '{}' is {}", head.text, text_of(ops[0]),
                                   kind_name(d.kind)));
    if (ins.op == Op::DsdStride && d.kind == Descriptor::Kind::Circ)
      fail(ops[0].col, "a circular buffer has no stride");
    if (ins.op == Op::DsdColor && mem)
      fail(ops[0].col, fmt::format("'{}' applies to fabric descriptors; '{}' is {}", head.text, text_of(ops[0]),
                                   kind_name(d.kind)));
    if (ins.op == Op::DsdAdd && !mem) fail(ops[0].col, "dsd.add moves a memory descriptor or circular buffer");
  }

  void float_instruction(const Token& head, const std::string& base, const std::vector<std::string>& parts,
                         const std::vector<RawOperand>& ops, Instruction& ins) {
    static const std::map<std::string, Op> ops_by_name{
        {"fadd", Op::FAdd}, {"fsub", Op::FSub}, {"fmul", Op::FMul},   {"fmax", Op::FMax},     {"fmin", Op::FMin},
        {"fmov", Op::FMov}, {"fneg", Op::FNeg}, {"fexp", Op::FExp},   {"frecip", Op::FRecip}, {"fmac", Op::FMac},
        {"fcvt", Op::FCvt}, {"fsum", Op::FSum}, {"frmax", Op::FRMax}, {"frmin", Op::FRMin},   {"fdot", Op::FDot}};
    ins.op = ops_by_name.at(base);
    const bool mixed_ok = ins.op == Op::FMac || ins.op == Op::FDot;
    const bool raw_ok = ins.op == Op::FMov;
    if (ins.op == Op::FCvt) {
      if (parts.size() != 3) fail(head.col, "expected fcvt.TO.FROM, e.g. fcvt.f32.f16");
    } else if (parts.size() < 2 || parts.size() > (mixed_ok ? 3u : 2u)) {
      fail(head.col,
           mixed_ok ? fmt::format("expected {}.TYPE or {}.f32.TYPE (FP32 accumulation of f16/bf16 inputs)", base, base)
                    : fmt::format("expected {}.TYPE (f16, bf16, f32{})", base, raw_ok ? ", u16, u32" : ""));
    }
    auto type_of = [&](const std::string& p) {
      auto t = parse_dtype(p);
      if (!t || (!is_float(*t) && !raw_ok))
        fail(head.col, fmt::format("'{}': unknown type '.{}' (expected f16, bf16{})", head.text, p,
                                   raw_ok ? ", f32, u16 or u32" : " or f32"));
      return *t;
    };
    ins.type = type_of(parts[1]);
    ins.type2 = parts.size() == 3 ? type_of(parts[2]) : ins.type;
    if (ins.op == Op::FCvt && ins.type == ins.type2) fail(head.col, "fcvt converts between two different types");
    if (mixed_ok && parts.size() == 3 && (ins.type != DType::F32 || ins.type2 == DType::F32))
      fail(head.col,
           fmt::format("mixed precision is {}.f32.f16 or {}.f32.bf16 (FP32 accumulator, 16-bit inputs)", base, base));

    const Op op = ins.op;
    const bool reduction = is_reduction(op);
    const std::size_t arity = (op == Op::FMac)   ? 4
                              : (op == Op::FDot) ? 3
                              : (op == Op::FAdd || op == Op::FSub || op == Op::FMul || op == Op::FMax || op == Op::FMin)
                                  ? 3
                                  : 2;
    const char* form = op == Op::FMac   ? "fmac.T D, A, B, C (D = A + B x C)"
                       : op == Op::FDot ? "fdot.T rD, A, B (rD += sum of A x B)"
                       : reduction      ? "OP.T rD, A (rD accumulates the reduction of A)"
                       : arity == 3     ? "OP.T D, A, B"
                                        : "OP.T D, A";
    need(head, ops, arity, arity, form);
    bool any_dsd = false;
    for (const auto& o : ops) any_dsd = any_dsd || is_dsd(o);
    ins.vector = any_dsd;
    if (reduction && !any_dsd)
      fail(ops[1].col, fmt::format("'{}' reduces a vector: a source must be a descriptor", base));
    if (!any_dsd && (ins.async || ins.on_done != OnDone::None))
      fail(head.col, "only vector instructions (with a descriptor operand) can be async");
    if (reduction && ins.async) fail(head.col, "reductions into a register cannot be async");
    if (ins.on_done != OnDone::None && !ins.async) fail(head.col, "a completion action needs 'async'");
    if (ins.ut != Instruction::kUnordered && !ins.async) fail(head.col, "a microthread (ut=) needs 'async'");

    Section& s = *section_;
    int fab_in = 0, fab_out = 0, sparse = 0;
    auto check_dsd = [&](const RawOperand& o, unsigned index, bool dest, DType want) {
      const Descriptor& d = s.prog.descriptors[index].init;
      if (dest && d.kind == Descriptor::Kind::FabIn)
        fail(o.col, fmt::format("'{}' is a fabric input and cannot be a destination", text_of(o)));
      if (!dest && d.kind == Descriptor::Kind::FabOut)
        fail(o.col, fmt::format("'{}' is a fabric output and cannot be a source", text_of(o)));
      if (d.dtype != want)
        fail(o.col, fmt::format("'{}' holds {} but this operand of '{}' is {}", text_of(o), name(d.dtype), head.text,
                                name(want)));
      fab_in += d.kind == Descriptor::Kind::FabIn;
      fab_out += d.kind == Descriptor::Kind::FabOut;
      sparse += d.sparse;
    };
    for (std::size_t k = 0; k < arity; ++k) {
      const RawOperand& o = ops[k];
      const bool dest = k == 0;
      // fmac: D, A are the accumulator format; B, C the input format. fdot: rD accumulator, A, B inputs.
      DType want = ins.type;
      if (op == Op::FMac && k >= 2) want = ins.type2;
      if (op == Op::FDot && k >= 1) want = ins.type2;
      if (op == Op::FCvt && k == 1) want = ins.type2;
      if (dest && reduction) {
        ins.ops[0] = Operand::r(reg(o));
        continue;
      }
      if (ins.vector) {
        if (dest && !is_dsd(o))
          fail(o.col,
               fmt::format("the destination of a vector '{}' must be a descriptor, found '{}'", base, text_of(o)));
        if (is_dsd(o)) {
          const unsigned index = dsd(o);
          check_dsd(o, index, dest, want);
          ins.ops[k] = Operand::dsd(index);
        } else {
          ins.ops[k] = Operand::r(reg(o));
        }
      } else {
        ins.ops[k] = Operand::r(reg(o));
      }
    }
    if (fab_in > 1)
      fail(head.col, "at most one fabric input per instruction (the ramp delivers one wavelet per cycle)");
    if (fab_out > 1) fail(head.col, "at most one fabric output per instruction");
    if (sparse && (op == Op::FExp || op == Op::FRecip || reduction || op == Op::FCvt))
      fail(head.col, fmt::format("'{}' cannot consume a sparse stream", base));
    if (sparse && fab_out)
      fail(head.col, "a sparse stream updates memory: the destination must be a memory descriptor");
  }

  std::string file_;
  int line_ = 0;
  std::string source_line_;
  std::vector<Diagnostic> diags_;
  std::map<std::string, std::int64_t> globals_;
  std::deque<Section> sections_;
  Section* section_ = nullptr;
  std::vector<Placement> placements_;
};

}  // namespace

std::vector<Placement> assemble(std::string_view text, const std::string& file_name) {
  sim::config::check_utf8(text, file_name);
  Assembler a(file_name);
  a.run(text);
  return a.placements();
}

std::vector<Placement> assemble_file(const std::string& path) {
  return assemble(sim::config::read_input_file(path, "the program file", sim::config::kMaxProgramBytes), path);
}

std::string Program::describe(std::uint32_t pc) const {
  if (pc >= code.size()) return fmt::format("pc {} (past the end of {})", pc, file);
  return fmt::format("'{}' at {}", pc < text.size() ? text[pc] : std::string(info(code[pc].op).mnemonic),
                     where[pc].str());
}

}  // namespace wafersim::hw::isa

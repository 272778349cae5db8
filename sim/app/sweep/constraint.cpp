#include "sim/app/sweep/constraint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "sim/config/diagnostics.h"

namespace wafersim::app::sweep {
using sim::config::ConfigError;
using sim::config::Diagnostic;
using sim::config::Location;

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'; }

}  // namespace

// Recursive descent over the grammar
//   or := and ('||' and)*      and := not ('&&' not)*      not := '!' not | cmp
//   cmp := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?
//   sum := prod (('+'|'-') prod)*      prod := unary (('*'|'/'|'%') unary)*
//   unary := '-' unary | atom          atom := number [unit] | string | name | call | '(' or ')'
class ExpressionParser {
 public:
  explicit ExpressionParser(Expression& e) : e_(e), s_(e.text_) {}

  void run() {
    e_.root_ = parse_or();
    skip();
    if (pos_ >= s_.size()) return;
    std::string rest = s_.substr(pos_);
    std::string hint;
    if (rest[0] == '=') hint = "; write '==' to compare";
    for (auto [word, op] : {std::pair{"and", "&&"}, {"or", "||"}, {"not", "!"}})
      if (rest.compare(0, std::char_traits<char>::length(word), word) == 0)
        hint = fmt::format("; write '{}' for '{}'", op, word);
    e_.fail(pos_, fmt::format("unexpected '{}'{}", rest.substr(0, 1), hint));
  }

 private:
  using Term = Expression::Term;

  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool accept(const char* tok) {
    skip();
    std::size_t n = std::char_traits<char>::length(tok);
    if (s_.compare(pos_, n, tok) != 0) return false;
    // "<" must not swallow the first half of "<=", "!" not the first of "!=", and so on.
    if (n == 1 && pos_ + 1 < s_.size() && s_[pos_ + 1] == '=' && std::string("<>!=").find(tok[0]) != std::string::npos)
      return false;
    pos_ += n;
    return true;
  }
  std::size_t add(Term t) {
    e_.terms_.push_back(std::move(t));
    return e_.terms_.size() - 1;
  }
  std::size_t binary(const std::string& op, std::size_t a, std::size_t b, std::size_t column) {
    Term t;
    t.kind = Term::Kind::Binary;
    t.op = op;
    t.args = {a, b};
    t.column = column;
    return add(std::move(t));
  }

  std::size_t parse_or() {
    std::size_t a = parse_and();
    for (;;) {
      skip();
      std::size_t at = pos_;
      if (!accept("||")) return a;
      a = binary("||", a, parse_and(), at);
    }
  }
  std::size_t parse_and() {
    std::size_t a = parse_not();
    for (;;) {
      skip();
      std::size_t at = pos_;
      if (!accept("&&")) return a;
      a = binary("&&", a, parse_not(), at);
    }
  }
  std::size_t parse_not() {
    skip();
    std::size_t at = pos_;
    if (accept("!")) {
      Term t;
      t.kind = Term::Kind::Unary;
      t.op = "!";
      t.args = {parse_not()};
      t.column = at;
      return add(std::move(t));
    }
    return parse_cmp();
  }
  std::size_t parse_cmp() {
    std::size_t a = parse_sum();
    skip();
    std::size_t at = pos_;
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"})
      if (accept(op)) return binary(op, a, parse_sum(), at);
    return a;
  }
  std::size_t parse_sum() {
    std::size_t a = parse_prod();
    for (;;) {
      skip();
      std::size_t at = pos_;
      if (accept("+")) {
        a = binary("+", a, parse_prod(), at);
      } else if (accept("-")) {
        a = binary("-", a, parse_prod(), at);
      } else {
        return a;
      }
    }
  }
  std::size_t parse_prod() {
    std::size_t a = parse_unary();
    for (;;) {
      skip();
      std::size_t at = pos_;
      const char* op = accept("*") ? "*" : accept("/") ? "/" : accept("%") ? "%" : nullptr;
      if (!op) return a;
      a = binary(op, a, parse_unary(), at);
    }
  }
  std::size_t parse_unary() {
    skip();
    std::size_t at = pos_;
    if (accept("-")) {
      Term t;
      t.kind = Term::Kind::Unary;
      t.op = "-";
      t.args = {parse_unary()};
      t.column = at;
      return add(std::move(t));
    }
    return parse_atom();
  }

  std::size_t parse_atom() {
    skip();
    std::size_t at = pos_;
    if (pos_ >= s_.size()) e_.fail(pos_, "expected a value, found the end of the expression");
    char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      std::size_t inner = parse_or();
      if (!accept(")")) e_.fail(pos_, "expected ')'");
      return inner;
    }
    if (c == '\'' || c == '"') {
      std::size_t end = s_.find(c, pos_ + 1);
      if (end == std::string::npos) e_.fail(at, "unterminated string");
      Term t;
      t.literal = Scalar::of_string(s_.substr(pos_ + 1, end - pos_ - 1));
      t.column = at;
      pos_ = end + 1;
      return add(std::move(t));
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return parse_number(at);
    if (ident_start(c)) {
      std::size_t end = pos_;
      while (end < s_.size() && ident_char(s_[end])) {
        // A '-' belongs to the name only between two name characters ("packet-size").
        if (s_[end] == '-' && !(end + 1 < s_.size() && ident_start(s_[end + 1]))) break;
        ++end;
      }
      std::string word = s_.substr(pos_, end - pos_);
      pos_ = end;
      if (word == "true" || word == "false") {
        Term t;
        t.literal = Scalar::of_boolean(word == "true");
        t.column = at;
        return add(std::move(t));
      }
      skip();
      if (pos_ < s_.size() && s_[pos_] == '(') {
        static const std::vector<std::string> kFunctions{"min", "max", "abs", "log2"};
        if (std::find(kFunctions.begin(), kFunctions.end(), word) == kFunctions.end()) {
          std::string hint = sim::config::closest_match(word, kFunctions);
          e_.fail(at, fmt::format("unknown function '{}'{}", word,
                                  hint.empty() ? "; functions are min, max, abs, log2"
                                               : fmt::format("; did you mean '{}'?", hint)));
        }
        ++pos_;
        Term t;
        t.kind = Term::Kind::Call;
        t.op = word;
        t.column = at;
        if (!accept(")")) {
          do t.args.push_back(parse_or());
          while (accept(","));
          if (!accept(")")) e_.fail(pos_, "expected ',' or ')'");
        }
        std::size_t want = (word == "min" || word == "max") ? 2 : 1;
        if (t.args.size() != want)
          e_.fail(at,
                  fmt::format("{}() takes {} argument{}, found {}", word, want, want == 1 ? "" : "s", t.args.size()));
        return add(std::move(t));
      }
      Term t;
      t.kind = Term::Kind::Name;
      t.op = Expression::normalise(word);
      t.column = at;
      if (std::find(e_.names_.begin(), e_.names_.end(), t.op) == e_.names_.end()) {
        e_.names_.push_back(t.op);
        e_.name_columns_.push_back(at);
      }
      return add(std::move(t));
    }
    e_.fail(at, fmt::format("expected a value, found '{}'", s_.substr(pos_, 1)));
  }

  // A number, optionally followed by a unit: "32", "0.5", "1e3", "1.1 GHz", "48 KiB".
  std::size_t parse_number(std::size_t at) {
    std::size_t end = pos_;
    while (end < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[end])) || s_[end] == '.')) ++end;
    if (end < s_.size() && (s_[end] == 'e' || s_[end] == 'E')) {
      std::size_t exp = end + 1;
      if (exp < s_.size() && (s_[exp] == '+' || s_[exp] == '-')) ++exp;
      if (exp < s_.size() && std::isdigit(static_cast<unsigned char>(s_[exp]))) {
        end = exp;
        while (end < s_.size() && std::isdigit(static_cast<unsigned char>(s_[end]))) ++end;
      }
    }
    std::string number = s_.substr(pos_, end - pos_);
    double v = 0;
    if (!sweep::parse_number(number, v)) e_.fail(at, fmt::format("malformed number '{}'", number));
    pos_ = end;
    // A unit: letters and '/' right after the number (one space allowed).
    std::size_t u = pos_;
    if (u < s_.size() && s_[u] == ' ') ++u;
    std::size_t uend = u;
    if (u < s_.size() && std::isalpha(static_cast<unsigned char>(s_[u])))
      while (uend < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[uend])) || s_[uend] == '/')) ++uend;
    const std::string word = s_.substr(u, uend - u);
    if (word == "and" || word == "or" || word == "not") uend = u;  // a misspelt operator, reported later
    Term t;
    t.column = at;
    bool unit_ends = uend >= s_.size() || std::string("._(").find(s_[uend]) == std::string::npos;
    if (uend > u && unit_ends) {
      std::string quantity = number + " " + s_.substr(u, uend - u);
      Scalar q = interpret(quantity);
      if (q.kind != Scalar::Kind::Number)
        e_.fail(u, fmt::format("unknown unit '{}' (expected e.g. '1.1 GHz', '48 KiB', '100 Gb/s', '3 us', '2 cycles')",
                               s_.substr(u, uend - u)));
      t.literal = q;
      pos_ = uend;
    } else {
      t.literal = Scalar::of_number(v);
    }
    return add(std::move(t));
  }

  Expression& e_;
  const std::string& s_;
  std::size_t pos_ = 0;
};

std::string Expression::normalise(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

Expression Expression::parse(const std::string& text, const Location& where, const std::string& path) {
  Expression e;
  e.text_ = text;
  e.where_ = where;
  e.path_ = path;
  ExpressionParser(e).run();
  return e;
}

Location Expression::name_location(std::size_t i) const {
  Location l = where_;
  if (l.line > 0) l.column += static_cast<int>(name_columns_.at(i));
  return l;
}

void Expression::fail(std::size_t column, const std::string& message) const {
  Location l = where_;
  if (l.line > 0) l.column += static_cast<int>(column);
  throw ConfigError(Diagnostic{l, path_, fmt::format("in '{}': {}", text_, message)});
}

bool Expression::evaluate(const std::function<Scalar(const std::string&)>& lookup) const {
  Scalar r = eval(root_, lookup);
  if (r.kind != Scalar::Kind::Boolean)
    fail(terms_[root_].column,
         fmt::format("a constraint must be true or false, this is a {} ({})", r.kind_name(), r.str()));
  return r.boolean;
}

Scalar Expression::eval(std::size_t index, const std::function<Scalar(const std::string&)>& lookup) const {
  const Term& t = terms_[index];
  using K = Scalar::Kind;
  auto number = [&](const Scalar& s, std::size_t arg) {
    if (s.kind != K::Number)
      fail(terms_[t.args[arg]].column,
           fmt::format("'{}' needs a number, found a {} ({})", t.op, s.kind_name(), s.str()));
    return s.number;
  };
  switch (t.kind) {
    case Term::Kind::Literal:
      return t.literal;
    case Term::Kind::Name:
      return lookup(t.op);
    case Term::Kind::Unary: {
      Scalar a = eval(t.args[0], lookup);
      if (t.op == "!") {
        if (a.kind != K::Boolean)
          fail(t.column, fmt::format("'!' needs true or false, found a {} ({})", a.kind_name(), a.str()));
        return Scalar::of_boolean(!a.boolean);
      }
      return Scalar::of_number(-number(a, 0));
    }
    case Term::Kind::Call: {
      Scalar a = eval(t.args[0], lookup);
      double x = number(a, 0);
      if (t.op == "abs") return Scalar::of_number(std::fabs(x));
      if (t.op == "log2") {
        if (x <= 0) fail(t.column, fmt::format("log2 of {} is undefined", x));
        return Scalar::of_number(std::log2(x));
      }
      double y = number(eval(t.args[1], lookup), 1);
      return Scalar::of_number(t.op == "min" ? std::min(x, y) : std::max(x, y));
    }
    case Term::Kind::Binary:
      break;
  }
  const std::string& op = t.op;
  if (op == "&&" || op == "||") {
    Scalar a = eval(t.args[0], lookup);
    if (a.kind != K::Boolean)
      fail(terms_[t.args[0]].column,
           fmt::format("'{}' needs true or false, found a {} ({})", op, a.kind_name(), a.str()));
    if (op == "&&" && !a.boolean) return a;
    if (op == "||" && a.boolean) return a;
    Scalar b = eval(t.args[1], lookup);
    if (b.kind != K::Boolean)
      fail(terms_[t.args[1]].column,
           fmt::format("'{}' needs true or false, found a {} ({})", op, b.kind_name(), b.str()));
    return b;
  }
  Scalar a = eval(t.args[0], lookup);
  Scalar b = eval(t.args[1], lookup);
  if (op == "==" || op == "!=") {
    if (a.kind != b.kind)
      fail(t.column,
           fmt::format("cannot compare a {} ({}) with a {} ({})", a.kind_name(), a.str(), b.kind_name(), b.str()));
    bool eq = a.kind == K::Number    ? a.number == b.number
              : a.kind == K::Boolean ? a.boolean == b.boolean
                                     : a.string == b.string;
    return Scalar::of_boolean(op == "==" ? eq : !eq);
  }
  if (op == "<" || op == "<=" || op == ">" || op == ">=") {
    if (a.kind == K::String && b.kind == K::String) {
      int c = a.string.compare(b.string);
      return Scalar::of_boolean(op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0);
    }
    if (a.kind != K::Number || b.kind != K::Number)
      fail(t.column,
           fmt::format("cannot order a {} ({}) and a {} ({})", a.kind_name(), a.str(), b.kind_name(), b.str()));
    double x = a.number, y = b.number;
    return Scalar::of_boolean(op == "<" ? x < y : op == "<=" ? x <= y : op == ">" ? x > y : x >= y);
  }
  double x = number(a, 0), y = number(b, 1);
  if (op == "+") return Scalar::of_number(x + y);
  if (op == "-") return Scalar::of_number(x - y);
  if (op == "*") return Scalar::of_number(x * y);
  if (y == 0) fail(t.column, fmt::format("division by zero ({} {} {})", x, op, y));
  if (op == "/") return Scalar::of_number(x / y);
  return Scalar::of_number(std::fmod(x, y));
}

}  // namespace wafersim::app::sweep

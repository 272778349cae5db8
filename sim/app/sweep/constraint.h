#pragma once
// Constraints of a sweep: boolean expressions over the parameters of a point, such as
//   fabric.queue_depth * fabric.hop_latency <= 32 && workload.pattern != 'transpose'
// Operators: || && ! == != < <= > >= + - * / % and parentheses; functions min, max, abs,
// log2; literals: numbers, quantities with a unit ("1 GHz", in base units like the values),
// 'strings', true, false. A '-' inside an option name is written '_' (workload.packet_size).

#include <functional>
#include <string>
#include <vector>

#include "sim/app/sweep/value.h"
#include "sim/config/node.h"

namespace wafersim::app::sweep {

class Expression {
 public:
  // Contract: returns a well-formed expression or throws sim::config::ConfigError at the
  // column of the problem; `where` is the location of the text's first character and
  // `path` the key path named in diagnostics.
  static Expression parse(const std::string& text, const sim::config::Location& where, const std::string& path);

  // Every name the expression reads, in order of first use.
  [[nodiscard]] const std::vector<std::string>& names() const { return names_; }
  [[nodiscard]] const std::string& text() const { return text_; }
  // Where name `i` of names() was written.
  [[nodiscard]] sim::config::Location name_location(std::size_t i) const;

  // Evaluates the expression; `lookup` gives the value of every name in names(). Throws
  // ConfigError for a type mismatch (comparing a string with a number, say), a division by
  // zero or a result that is not a boolean.
  [[nodiscard]] bool evaluate(const std::function<Scalar(const std::string&)>& lookup) const;

  // The normalised form of a name: '-' becomes '_'.
  static std::string normalise(std::string name);

 private:
  struct Term {
    enum class Kind { Literal, Name, Unary, Binary, Call } kind = Kind::Literal;
    std::string op;  // operator or function name; the name for Kind::Name
    Scalar literal;
    std::vector<std::size_t> args;
    std::size_t column = 0;  // offset in text_
  };
  friend class ExpressionParser;
  [[nodiscard]] Scalar eval(std::size_t term, const std::function<Scalar(const std::string&)>& lookup) const;
  [[noreturn]] void fail(std::size_t column, const std::string& message) const;

  std::string text_;
  std::string path_;
  sim::config::Location where_;
  std::vector<Term> terms_;
  std::size_t root_ = 0;
  std::vector<std::string> names_;
  std::vector<std::size_t> name_columns_;
};

}  // namespace wafersim::app::sweep

#pragma once
// Configuration diagnostics in the compiler convention
// "FILE:LINE:COL: error: key.path: what was expected, what was found".

#include <string>
#include <vector>

#include "sim/config/node.h"
#include "sim/errors.h"

namespace wafersim::sim::config {

struct Diagnostic {
  Location location;
  std::string key_path;  // dotted, e.g. "wafer.pe.sram.size"; empty for file-level errors
  std::string message;
  [[nodiscard]] std::string str() const;
};

// One or more diagnostics; exit code 2.
class ConfigError : public InputError {
 public:
  explicit ConfigError(std::vector<Diagnostic> diagnostics);
  explicit ConfigError(Diagnostic diagnostic) : ConfigError(std::vector<Diagnostic>{std::move(diagnostic)}) {}
  [[nodiscard]] const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

// The closest candidate to `word` by edit distance, or "" when nothing is close enough.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace wafersim::sim::config

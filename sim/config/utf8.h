#pragma once
// UTF-8 validity of text read from users (files, command-line arguments), checked where it
// is read so that no invalid byte reaches an output file or a JSON writer later.

#include <cstddef>
#include <string_view>

namespace wafersim::sim::config {

// The offset of the first byte that does not belong to a well-formed UTF-8 sequence (overlong
// forms, surrogates and code points past U+10FFFF included), or npos when `text` is valid.
std::size_t invalid_utf8_at(std::string_view text);

// Throws ConfigError at "FILE:LINE:COL" (1-based, columns in bytes) when `text` is not valid
// UTF-8, naming the offending byte.
void check_utf8(std::string_view text, const std::string& file_name);

}  // namespace wafersim::sim::config

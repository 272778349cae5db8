#pragma once
// A command-line option that takes one of a closed set of words: the help shows the set, and
// a wrong word is an error naming the set and the closest word.

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace wafersim::app {

// A validator accepting exactly `names`; its description is "{a,b,c}" (shown in the help)
// and a wrong word fails with "'x' is not one of {a,b,c}; did you mean 'a'?".
CLI::Validator one_of(const std::vector<std::string>& names);

}  // namespace wafersim::app

#pragma once
// The identity of this process's run: drawn once per process and stamped into run.json and
// trace/meta.json, so that a report can tell a run's own trace from one left by another run.

#include <string>

namespace wafersim::sim {

// 16 hexadecimal digits, random (time, process id and the system's entropy); the same value
// for the life of the process.
const std::string& run_id();

}  // namespace wafersim::sim

#include "hw/trace/core_timeline.h"

#include <fmt/format.h>

namespace wafersim::hw::trace {

using sim::trace::Arg;

sim::trace::TrackId CoreTimeline::track(PeCoord pe, std::uint32_t thread) {
  const std::pair<std::uint32_t, std::uint32_t> key{(std::uint32_t{pe.y} << 16) | pe.x, thread};
  auto it = tracks_.find(key);
  if (it != tracks_.end()) return it->second;
  const std::string process = fmt::format("wafer{} PE {},{}", wafer_, pe.x, pe.y);
  const sim::trace::TrackId id =
      recorder_.timeline()->track(process, thread == 0 ? std::string("tasks") : fmt::format("microthread {}", thread));
  tracks_.emplace(key, id);
  return id;
}

void CoreTimeline::task_ran(PeCoord pe, const isa::Program& program, const isa::TaskDecl& task, sim::Cycle start,
                            sim::Cycle end) {
  (void)program;
  ++tasks_;
  recorder_.timeline()->slice(track(pe, 0), task.name, task.data ? "data task" : "task", recorder_.time_of(start),
                              recorder_.time_of(end),
                              {Arg::num("task", task.id), Arg::num("start_cycle", static_cast<double>(start.count())),
                               Arg::num("cycles", static_cast<double>((end - start).count()))});
}

void CoreTimeline::vector_op_ran(PeCoord pe, const isa::Program& program, std::uint32_t pc, std::uint32_t thread,
                                 std::uint32_t elements, sim::Cycle start, sim::Cycle end) {
  ++vector_ops_;
  const std::string text =
      pc < program.text.size() ? program.text[pc] : std::string(isa::info(program.code[pc].op).mnemonic);
  const std::string name = text.substr(0, text.find(' '));
  recorder_.timeline()->slice(
      track(pe, thread), name, thread == 0 ? "vector" : "vector async", recorder_.time_of(start),
      recorder_.time_of(end),
      {Arg::str("instruction", text),
       Arg::str("at", pc < program.where.size() ? program.where[pc].str() : program.file),
       Arg::num("elements", elements), Arg::num("start_cycle", static_cast<double>(start.count())),
       Arg::num("cycles", static_cast<double>((end - start).count()))});
}

}  // namespace wafersim::hw::trace

#include "sim/trace/vcd_file.h"

#include <fmt/format.h>

#include <stdexcept>

#include "sim/errors.h"

namespace wafersim::sim::trace {

VcdFile::VcdFile(const std::filesystem::path& path) : path_(path) {
  if (path.extension() != ".vcd") throw std::logic_error("VcdFile: the path must end in .vcd");
  if (sc_core::sc_get_status() != sc_core::SC_ELABORATION)
    throw std::logic_error("VcdFile: created after the simulation started");
  std::filesystem::path stem = path;
  stem.replace_extension();
  file_ = sc_core::sc_create_vcd_trace_file(stem.string().c_str());
  if (!file_) throw InputError(fmt::format("cannot write {}", path.string()));
  file_->set_time_unit(1, sc_core::SC_PS);
}

VcdFile::~VcdFile() { close(); }

void VcdFile::add(const std::uint32_t& variable, const std::string& name, int bits) {
  if (!file_) throw std::logic_error("VcdFile: add after close");
  sc_core::sc_trace(file_, variable, name, bits);
  ++variables_;
}

void VcdFile::close() {
  if (!file_) return;
  sc_core::sc_close_vcd_trace_file(file_);
  file_ = nullptr;
}

}  // namespace wafersim::sim::trace

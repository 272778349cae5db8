#include "sim/trace/vcd_file.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <sstream>
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
  if (!file_) throw OutputError(fmt::format("cannot write {}", path.string()));
  file_->set_time_unit(1, sc_core::SC_PS);
}

VcdFile::~VcdFile() { close(); }

void VcdFile::add(const std::uint32_t& variable, const std::string& name, int bits) {
  if (!file_) throw std::logic_error("VcdFile: add after close");
  sc_core::sc_trace(file_, variable, name, bits);
  vars_.push_back(Variable{&variable, name, bits});
  ++variables_;
}

void VcdFile::close(std::uint64_t end_ps) {
  if (!file_) return;
  sc_core::sc_close_vcd_trace_file(file_);
  file_ = nullptr;
  if (end_ps) append_final(end_ps);
}

void VcdFile::append_final(std::uint64_t end_ps) const {
  // Map names to SystemC's identifiers from the header (scopes below the top "SystemC" one
  // joined with '.') and find the last time written.
  std::ifstream in(path_);
  if (!in) return;  // SystemC writes nothing when the simulation never started
  std::map<std::string, std::string> ids;
  std::vector<std::string> scopes;
  std::string line;
  std::uint64_t last = 0;
  bool header = true, any_time = false, values_after_last = false;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string tok;
    ls >> tok;
    if (header) {
      if (tok == "$scope") {
        std::string kind, name;
        ls >> kind >> name;
        scopes.push_back(name);
      } else if (tok == "$upscope" && !scopes.empty()) {
        scopes.pop_back();
      } else if (tok == "$var") {
        std::string type, bits, id, name;
        ls >> type >> bits >> id >> name;
        std::string full;
        for (std::size_t i = 1; i < scopes.size(); ++i) full += scopes[i] + ".";
        ids[full + name] = id;
      } else if (tok == "$enddefinitions") {
        header = false;
      }
    } else if (!tok.empty() && tok[0] == '#') {
      last = std::stoull(tok.substr(1));
      any_time = true;
      values_after_last = false;
    } else if (!tok.empty() && tok[0] != '$') {
      values_after_last = true;
    }
  }
  in.close();
  // SystemC ends the file with the time it stopped at, without that step's values.
  if (any_time && (end_ps < last || (end_ps == last && values_after_last))) return;
  std::ofstream out(path_, std::ios::app);
  if (!any_time || end_ps > last) out << "#" << end_ps << "\n";
  for (const Variable& v : vars_) {
    auto it = ids.find(v.name);
    if (it == ids.end()) continue;
    if (v.bits == 1) {
      out << (*v.value & 1u) << it->second << "\n";
    } else {
      std::string bin;
      for (int b = v.bits - 1; b >= 0; --b) bin += ((*v.value >> b) & 1u) ? '1' : '0';
      out << "b" << bin << " " << it->second << "\n";
    }
  }
}

}  // namespace wafersim::sim::trace

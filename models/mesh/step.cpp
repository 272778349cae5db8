#include "models/mesh/step.h"

#include <algorithm>
#include <map>

namespace wafersim::models::mesh {

std::uint64_t StepBound::roofline() const { return std::max({compute, sram, fabric, edge}); }

const char* StepBound::binds() const {
  const std::uint64_t r = roofline();
  if (r == compute) return "compute";
  if (r == sram) return "sram";
  if (r == fabric) return "fabric";
  return "edge";
}

namespace {

// Class ids in order of first appearance, and each class's first member.
std::vector<std::uint32_t> classes(std::uint32_t n, const KeyOf& key, std::vector<std::uint32_t>* first) {
  std::map<std::string, std::uint32_t> ids;
  std::vector<std::uint32_t> out(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    const auto [it, added] = ids.emplace(key(i), static_cast<std::uint32_t>(ids.size()));
    if (added) first->push_back(i);
    out[i] = it->second;
  }
  return out;
}

}  // namespace

void build_programs(MeshStep& step, std::uint32_t rows, std::uint32_t columns, const KeyOf& row_key,
                    const KeyOf& col_key, const Build& build, bool code) {
  std::vector<std::uint32_t> first_row, first_col;
  step.row_class = classes(rows, row_key, &first_row);
  step.col_class = classes(columns, col_key, &first_col);
  step.col_classes = static_cast<std::uint32_t>(first_col.size());
  step.programs.clear();
  step.table.assign(first_row.size() * first_col.size(), 0);
  if (!code) return;
  for (std::size_t rc = 0; rc < first_row.size(); ++rc)
    for (std::size_t cc = 0; cc < first_col.size(); ++cc) {
      step.table[rc * first_col.size() + cc] = static_cast<std::uint32_t>(step.programs.size());
      step.programs.push_back(build(first_row[rc], first_col[cc]));
    }
}

void build_programs_by_pe(MeshStep& step, std::uint32_t rows, std::uint32_t columns, const PeKeyOf& pe_key,
                          const Build& build, bool code) {
  step.row_class.resize(rows);
  step.col_class.resize(columns);
  for (std::uint32_t r = 0; r < rows; ++r) step.row_class[r] = r;
  for (std::uint32_t c = 0; c < columns; ++c) step.col_class[c] = c;
  step.col_classes = columns;
  step.programs.clear();
  step.table.assign(std::size_t{rows} * columns, 0);
  if (!code) return;
  std::map<std::string, std::uint32_t> ids;
  for (std::uint32_t r = 0; r < rows; ++r)
    for (std::uint32_t c = 0; c < columns; ++c) {
      const auto [it, added] = ids.emplace(pe_key(r, c), static_cast<std::uint32_t>(step.programs.size()));
      if (added) step.programs.push_back(build(r, c));
      step.table[std::size_t{r} * columns + c] = it->second;
    }
}

}  // namespace wafersim::models::mesh

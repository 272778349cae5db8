#pragma once
// The energy windows of a traced run for the report (table energy-w<N>, docs/energy.md).

#include <cstdint>
#include <filesystem>

#include <nlohmann/json.hpp>

namespace wafersim::app::report {

// Adds wafer `energy`'s windows (an entry of meta.json's energy.wafers) to the wafer's fabric
// entry of the report data, on its regions and frames: frames[i].energy (fJ per region),
// and `energy` with the regions' PEs, static power and tile area, the dynamic energy per
// window by component and the totals. Throws sim::InputError when the table does not match.
void add_energy(nlohmann::ordered_json& fabric, const std::filesystem::path& dir, const nlohmann::ordered_json& meta,
                const nlohmann::ordered_json& energy, std::uint64_t windows);

}  // namespace wafersim::app::report

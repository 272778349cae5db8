#include "sim/app/report/report_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim/app/report/report_energy.h"
#include "sim/app/report/table_reader.h"
#include "sim/app/report/trace_meta.h"
#include "sim/config/input_file.h"
#include "sim/config/utf8.h"
#include "sim/errors.h"

namespace wafersim::app::report {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

constexpr std::uint32_t kDirs = 5;

struct Hot {
  std::uint64_t stalled = 0, forwarded = 0, occupancy = 0;
};

json fabric_section(const fs::path& dir, const json& meta, const json& wafer, std::uint64_t windows,
                    std::uint64_t window_cycles, std::uint64_t end_cycle, const ReportOptions& options) {
  const fs::path meta_path = dir / "meta.json";
  const auto table_name = field<std::string>(wafer, "table", meta_path);
  const json& describe = meta.at("tables").at(table_name);
  const auto cols = field<std::uint32_t>(wafer, "cols", meta_path);
  const auto rows = field<std::uint32_t>(wafer, "rows", meta_path);
  const auto size = field<std::uint32_t>(wafer, "region_size", meta_path);
  const auto area = field<std::vector<std::uint32_t>>(wafer, "area", meta_path);
  const bool by_color = field<bool>(wafer, "by_color", meta_path);
  if (area.size() != 4) throw sim::InputError(fmt::format("{}: 'area' must have 4 numbers", meta_path.string()));
  const std::uint32_t cells = cols * rows;
  const std::uint64_t frames = std::max<std::uint64_t>(1, std::min<std::uint64_t>(windows, options.frames));
  const std::uint64_t per_frame = windows == 0 ? 1 : (windows + frames - 1) / frames;
  const std::uint64_t frame_count = windows == 0 ? 0 : (windows + per_frame - 1) / per_frame;

  // [frame][dir][cell] forwarded; [frame][cell] stalled and occupancy; totals; per window.
  std::vector<std::vector<std::vector<std::uint64_t>>> fwd(
      frame_count, std::vector<std::vector<std::uint64_t>>(kDirs, std::vector<std::uint64_t>(cells, 0)));
  std::vector<std::vector<std::uint64_t>> stall(frame_count, std::vector<std::uint64_t>(cells, 0));
  std::vector<std::vector<std::uint64_t>> occ(frame_count, std::vector<std::uint64_t>(cells, 0));
  std::vector<std::uint64_t> s_fwd(windows, 0), s_stall(windows, 0), s_occ(windows, 0);
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, Hot> hot;  // (cell, dir, color)
  std::uint64_t t_fwd = 0, t_stall = 0, t_occ = 0;
  const fs::path table = dir / describe.at("file").get<std::string>();
  read_table(table, describe, [&](const std::vector<std::uint64_t>& f, std::uint64_t line) {
    const std::uint64_t w = f[0], x = f[1], y = f[2], d = f[3];
    const std::uint64_t color = by_color ? f[4] : 0;
    const std::size_t v = by_color ? 5 : 4;
    if (w >= windows || d >= kDirs || color >= kMaxReportColors || x < area[0] || y < area[1] || x > area[2] ||
        y > area[3] || (x - area[0]) % size || (y - area[1]) % size)
      throw sim::InputError(fmt::format("{}:{}: window, region or direction out of range", table.string(), line));
    const auto cell = static_cast<std::uint32_t>((y - area[1]) / size * cols + (x - area[0]) / size);
    const std::uint64_t fr = w / per_frame;
    fwd[fr][d][cell] += f[v];
    stall[fr][cell] += f[v + 1];
    occ[fr][cell] += f[v + 2];
    s_fwd[w] += f[v];
    s_stall[w] += f[v + 1];
    s_occ[w] += f[v + 2];
    t_fwd += f[v];
    t_stall += f[v + 1];
    t_occ += f[v + 2];
    Hot& h = hot[{cell, static_cast<std::uint32_t>(d), static_cast<std::uint32_t>(color)}];
    h.stalled += f[v + 1];
    h.forwarded += f[v];
    h.occupancy += f[v + 2];
  });

  json out;
  for (const char* k :
       {"wafer", "width", "height", "area", "region_size", "cols", "rows", "colors", "by_color", "routers", "links"})
    out[k] = wafer.at(k);
  json jf = json::array();
  for (std::uint64_t fr = 0; fr < frame_count; ++fr) {
    const std::uint64_t first = fr * per_frame, last = std::min(windows, first + per_frame);
    json j;
    j["start"] = first * window_cycles;
    j["end"] = std::min(end_cycle, last * window_cycles);
    j["fwd"] = fwd[fr];
    j["stall"] = stall[fr];
    j["occ"] = occ[fr];
    jf.push_back(std::move(j));
  }
  out["frames"] = std::move(jf);
  out["series"] = {{"forwarded", s_fwd}, {"stalled", s_stall}, {"occupancy", s_occ}};
  out["totals"] = {{"forwarded", t_fwd}, {"stalled", t_stall}, {"occupancy", t_occ}};

  // Hotspots: the (region, direction, color) with the most stall cycles.
  std::vector<std::pair<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, Hot>> list(hot.begin(), hot.end());
  std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
    return a.second.stalled != b.second.stalled ? a.second.stalled > b.second.stalled
                                                : a.second.forwarded > b.second.forwarded;
  });
  const auto links = wafer.at("links").get<std::vector<std::vector<std::uint32_t>>>();
  const auto routers = wafer.at("routers").get<std::vector<std::uint32_t>>();
  json hs = json::array();
  for (const auto& [key, h] : list) {
    if (hs.size() >= options.top) break;
    if (h.stalled == 0 && !hs.empty()) break;
    const auto [cell, d, color] = key;
    const std::uint32_t cx = cell % cols, cy = cell / cols;
    const std::uint32_t x0 = area[0] + cx * size, y0 = area[1] + cy * size;
    json j;
    j["x0"] = x0;
    j["y0"] = y0;
    j["x1"] = std::min(area[2], x0 + size - 1);
    j["y1"] = std::min(area[3], y0 + size - 1);
    j["dir"] = d;
    j["color"] = by_color ? json(color) : json(nullptr);
    j["stalled"] = h.stalled;
    j["share"] = t_stall ? static_cast<double>(h.stalled) / static_cast<double>(t_stall) : 0.0;
    j["forwarded"] = h.forwarded;
    const double link_cycles = static_cast<double>(links.at(cell).at(d)) * static_cast<double>(end_cycle);
    j["utilization"] = link_cycles > 0 ? static_cast<double>(h.forwarded) / link_cycles : 0.0;
    const double queue_cycles = static_cast<double>(routers.at(cell)) * static_cast<double>(end_cycle);
    j["occupancy_mean"] = queue_cycles > 0 ? static_cast<double>(h.occupancy) / queue_cycles : 0.0;
    hs.push_back(std::move(j));
  }
  out["hotspots"] = std::move(hs);

  // The busiest outputs: (region, direction) by utilization over the run, all colors.
  std::map<std::pair<std::uint32_t, std::uint32_t>, Hot> outputs;
  for (const auto& [key, h] : hot) {
    Hot& o = outputs[{std::get<0>(key), std::get<1>(key)}];
    o.forwarded += h.forwarded;
    o.stalled += h.stalled;
    o.occupancy += h.occupancy;
  }
  std::vector<std::pair<double, std::pair<std::uint32_t, std::uint32_t>>> ranked;
  for (const auto& [key, h] : outputs) {
    const double link_cycles = static_cast<double>(links.at(key.first).at(key.second)) * static_cast<double>(end_cycle);
    if (link_cycles > 0 && h.forwarded > 0) ranked.push_back({static_cast<double>(h.forwarded) / link_cycles, key});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  json busiest = json::array();
  for (const auto& [util, key] : ranked) {
    if (busiest.size() >= options.top) break;
    const Hot& h = outputs[key];
    const std::uint32_t cx = key.first % cols, cy = key.first / cols;
    const std::uint32_t x0 = area[0] + cx * size, y0 = area[1] + cy * size;
    busiest.push_back({{"x0", x0},
                       {"y0", y0},
                       {"x1", std::min(area[2], x0 + size - 1)},
                       {"y1", std::min(area[3], y0 + size - 1)},
                       {"dir", key.second},
                       {"utilization", util},
                       {"forwarded", h.forwarded},
                       {"stalled", h.stalled},
                       {"share", t_stall ? static_cast<double>(h.stalled) / static_cast<double>(t_stall) : 0.0}});
  }
  out["busiest"] = std::move(busiest);
  return out;
}

// The PE windows of one wafer (tables pe-w<N> and sram-w<N>), on the fabric's region grid
// and frames: busy, stalled and SRAM per frame and region, series per window, the whole run's
// busy cycles by cause and the busiest regions.
void add_pe(json& fabric, const fs::path& dir, const json& meta, const json& pe, const json& sram,
            std::uint64_t windows, std::uint64_t end_cycle, const ReportOptions& options) {
  const fs::path meta_path = dir / "meta.json";
  for (const char* k : {"cols", "rows", "region_size", "area"})
    if (pe.at(k) != fabric.at(k))
      throw sim::InputError(fmt::format("{}: the PE windows of wafer {} are not on the fabric's regions ('{}' differs)",
                                        meta_path.string(), fabric.at("wafer").dump(), k));
  const auto cols = fabric.at("cols").get<std::uint32_t>(), rows = fabric.at("rows").get<std::uint32_t>();
  const auto size = fabric.at("region_size").get<std::uint32_t>();
  const auto area = fabric.at("area").get<std::vector<std::uint32_t>>();
  const std::uint32_t cells = cols * rows;
  const std::size_t frame_count = fabric.at("frames").size();
  const std::uint64_t per_frame = frame_count == 0 ? 1 : (windows + frame_count - 1) / frame_count;
  const auto causes = field<std::vector<std::string>>(pe, "stall_causes", meta_path);
  const std::size_t nc = causes.size();

  std::vector<std::vector<std::uint64_t>> busy(frame_count, std::vector<std::uint64_t>(cells, 0));
  std::vector<std::vector<std::uint64_t>> stalled(frame_count, std::vector<std::uint64_t>(cells, 0));
  std::vector<std::vector<std::uint64_t>> access(frame_count, std::vector<std::uint64_t>(cells, 0));
  std::vector<std::vector<std::uint64_t>> in_use(frame_count, std::vector<std::uint64_t>(cells, 0));
  std::vector<std::uint64_t> s_busy(windows, 0), s_flops(windows, 0), s_instr(windows, 0), s_bytes(windows, 0);
  std::vector<std::vector<std::uint64_t>> s_stall(nc, std::vector<std::uint64_t>(windows, 0));
  std::vector<std::uint64_t> c_busy(cells, 0), c_flops(cells, 0), c_in_use(cells, 0);
  std::vector<std::vector<std::uint64_t>> c_stall(cells, std::vector<std::uint64_t>(nc, 0));
  std::uint64_t t_busy = 0, t_flops = 0, t_instr = 0;
  std::vector<std::uint64_t> t_stall(nc, 0);
  auto cell_of = [&](std::uint64_t x, std::uint64_t y, const fs::path& table, std::uint64_t line) {
    if (x < area[0] || y < area[1] || x > area[2] || y > area[3] || (x - area[0]) % size || (y - area[1]) % size)
      throw sim::InputError(fmt::format("{}:{}: region out of range", table.string(), line));
    return static_cast<std::uint32_t>((y - area[1]) / size * cols + (x - area[0]) / size);
  };
  const json& pe_describe = meta.at("tables").at(field<std::string>(pe, "table", meta_path));
  if (pe_describe.at("values").size() != 6 + nc)
    throw sim::InputError(fmt::format("{}: the PE table has {} values, expected {}", meta_path.string(),
                                      pe_describe.at("values").size(), 6 + nc));
  const fs::path pe_table = dir / pe_describe.at("file").get<std::string>();
  read_table(pe_table, pe_describe, [&](const std::vector<std::uint64_t>& f, std::uint64_t line) {
    const std::uint64_t w = f[0];
    if (w >= windows) throw sim::InputError(fmt::format("{}:{}: window out of range", pe_table.string(), line));
    const std::uint32_t cell = cell_of(f[1], f[2], pe_table, line);
    const std::uint64_t fr = w / per_frame;
    std::uint64_t st = 0;
    for (std::size_t c = 0; c < nc; ++c) {
      st += f[9 + c];
      s_stall[c][w] += f[9 + c];
      c_stall[cell][c] += f[9 + c];
      t_stall[c] += f[9 + c];
    }
    busy[fr][cell] += f[3];
    stalled[fr][cell] += st;
    s_busy[w] += f[3];
    s_instr[w] += f[4];
    s_flops[w] += f[6];
    c_busy[cell] += f[3];
    c_flops[cell] += f[6];
    t_busy += f[3];
    t_flops += f[6];
    t_instr += f[4];
  });
  const json& sram_describe = meta.at("tables").at(field<std::string>(sram, "table", meta_path));
  const fs::path sram_table = dir / sram_describe.at("file").get<std::string>();
  read_table(sram_table, sram_describe, [&](const std::vector<std::uint64_t>& f, std::uint64_t line) {
    const std::uint64_t w = f[0];
    if (w >= windows || f.size() != 8)
      throw sim::InputError(fmt::format("{}:{}: window out of range", sram_table.string(), line));
    const std::uint32_t cell = cell_of(f[1], f[2], sram_table, line);
    const std::uint64_t fr = w / per_frame;
    access[fr][cell] += f[3] + f[4];
    in_use[fr][cell] = std::max(in_use[fr][cell], f[7]);
    c_in_use[cell] = std::max(c_in_use[cell], f[7]);
    s_bytes[w] += f[5] + f[6];
  });
  json& frames = fabric["frames"];
  for (std::size_t fr = 0; fr < frame_count; ++fr) {
    frames[fr]["busy"] = busy[fr];
    frames[fr]["pe_stall"] = stalled[fr];
    frames[fr]["sram_access"] = access[fr];
    frames[fr]["sram_in_use"] = in_use[fr];
  }
  json out;
  out["pes"] = pe.at("pes");
  out["pes_loaded"] = pe.at("pes_loaded");
  out["capacity_bytes"] = sram.at("capacity_bytes");
  out["causes"] = causes;
  json ss = json::array();
  for (std::size_t c = 0; c < nc; ++c) ss.push_back(s_stall[c]);
  out["series"] = {
      {"busy", s_busy}, {"instructions", s_instr}, {"flops", s_flops}, {"sram_bytes", s_bytes}, {"stall", ss}};
  out["totals"] = {{"busy", t_busy}, {"flops", t_flops}, {"instructions", t_instr}, {"stall", t_stall}};
  out["stats_totals"] = pe.at("totals");
  // The busiest regions, with their leading stall cause.
  std::vector<std::uint32_t> order;
  for (std::uint32_t c = 0; c < cells; ++c)
    if (c_busy[c]) order.push_back(c);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return c_busy[a] > c_busy[b]; });
  const auto pes = pe.at("pes").get<std::vector<std::uint32_t>>();
  json top = json::array();
  for (std::uint32_t c : order) {
    if (top.size() >= options.top) break;
    const std::uint32_t x0 = area[0] + c % cols * size, y0 = area[1] + c / cols * size;
    std::size_t lead = 0;
    std::uint64_t st = 0;
    for (std::size_t k = 0; k < nc; ++k) {
      st += c_stall[c][k];
      if (c_stall[c][k] > c_stall[c][lead]) lead = k;
    }
    const double pe_cycles =
        static_cast<double>(pes.at(c)) * static_cast<double>(std::max<std::uint64_t>(1, end_cycle));
    top.push_back({{"x0", x0},
                   {"y0", y0},
                   {"x1", std::min(area[2], x0 + size - 1)},
                   {"y1", std::min(area[3], y0 + size - 1)},
                   {"busy", c_busy[c]},
                   {"busy_fraction", static_cast<double>(c_busy[c]) / pe_cycles},
                   {"flops", c_flops[c]},
                   {"stalled", st},
                   {"lead_cause", st ? json(causes[lead]) : json(nullptr)},
                   {"lead_share", st ? static_cast<double>(c_stall[c][lead]) / static_cast<double>(st) : 0.0},
                   {"sram_in_use", c_in_use[c]}});
  }
  out["busiest"] = std::move(top);
  fabric["pe"] = std::move(out);
}

constexpr const char* kIntoMeshes = "wafer edges into the meshes (weights)";
constexpr const char* kOutOfMeshes = "meshes into wafer edges (gradients)";

// The co-simulated wafers' edges (tables edge-w<N>): per window, the wavelets into and out of
// every wafer's mesh (as bytes, 4 per wavelet, for the links' chart) and, per wafer, the
// totals of every column.
struct EdgeWindows {
  std::vector<std::uint64_t> in_bytes, out_bytes;
  json wafers = json::array();
};
EdgeWindows edge_windows(const fs::path& dir, const json& meta, std::uint64_t windows) {
  EdgeWindows out;
  const json edge = meta.value("edge", json::object());
  if (!edge.value("recorded", false)) return out;
  out.in_bytes.assign(windows, 0);
  out.out_bytes.assign(windows, 0);
  for (const auto& w : edge.at("wafers")) {
    // check_trace_meta: the table is described, with the key wafer and wavelets_in, wavelets_out first.
    const json& describe = meta.at("tables").at(w.at("table").get<std::string>());
    const fs::path table = dir / describe.at("file").get<std::string>();
    const std::size_t values = describe.at("values").size();
    std::vector<std::uint64_t> totals(values, 0);
    read_table(table, describe, [&](const std::vector<std::uint64_t>& f, std::uint64_t line) {
      if (f[0] >= windows) throw sim::InputError(fmt::format("{}:{}: window out of range", table.string(), line));
      for (std::size_t v = 0; v < values; ++v) totals[v] += f[2 + v];
      out.in_bytes[f[0]] += 4 * f[2];
      out.out_bytes[f[0]] += 4 * f[3];
    });
    json row = {{"wafer", w.at("wafer")}};
    for (std::size_t v = 0; v < values; ++v) row[describe.at("values")[v].at("name").get<std::string>()] = totals[v];
    out.wafers.push_back(std::move(row));
  }
  return out;
}

json links_section(const fs::path& dir, const json& meta, std::uint64_t windows) {
  json out;
  if (!meta.contains("links") || !meta.at("tables").contains("links")) {
    out["present"] = false;
    out["reason"] = "no MemoryX or SwarmX in this run (a single-wafer run)";
    return out;
  }
  const json& list = meta.at("links");
  const json& describe = meta.at("tables").at("links");
  const std::size_t n = list.size();
  std::vector<std::vector<std::uint64_t>> bytes(n, std::vector<std::uint64_t>(windows, 0));
  const fs::path table = dir / describe.at("file").get<std::string>();
  read_table(table, describe, [&](const std::vector<std::uint64_t>& f, std::uint64_t line) {
    if (f[0] >= windows || f[1] >= n)
      throw sim::InputError(fmt::format("{}:{}: window or link out of range", table.string(), line));
    bytes[f[1]][f[0]] += f[2];
  });
  // Series: MemoryX out (weights) and in (gradients), SwarmX down and up, wafer edges up and,
  // co-simulated, the wafers' edges into and out of their meshes.
  struct Series {
    std::string name;
    std::vector<std::uint64_t> bytes;
  };
  std::map<std::string, Series> series;
  auto kind = [](const json& l) {
    const auto group = l.at("group").get<std::string>();
    const auto label = l.at("label").get<std::string>();
    const bool up = label.find("(gradients)") != std::string::npos;
    if (group == "memoryx") return up ? std::string("MemoryX in (gradients)") : std::string("MemoryX out (weights)");
    if (group == "swarmx") return up ? std::string("SwarmX up (gradients)") : std::string("SwarmX down (weights)");
    return std::string("wafer edges out (gradients)");
  };
  json per = json::array();
  for (std::size_t i = 0; i < n; ++i) {
    const std::string k = kind(list[i]);
    auto& s = series[k];
    s.name = k;
    if (s.bytes.empty()) s.bytes.assign(windows, 0);
    for (std::uint64_t w = 0; w < windows; ++w) s.bytes[w] += bytes[i][w];
    per.push_back({{"label", list[i].at("label")},
                   {"group", list[i].at("group")},
                   {"bandwidth_bps", list[i].at("bandwidth_bps")},
                   {"bytes", list[i].at("bytes")}});
  }
  // The weights' path from MemoryX into the wafers' meshes, then the gradients' path back.
  EdgeWindows edges = edge_windows(dir, meta, windows);
  if (!edges.wafers.empty()) {
    series[kIntoMeshes] = Series{kIntoMeshes, std::move(edges.in_bytes)};
    series[kOutOfMeshes] = Series{kOutOfMeshes, std::move(edges.out_bytes)};
  }
  json js = json::array();
  for (const char* k : {"MemoryX out (weights)", "SwarmX down (weights)", kIntoMeshes, kOutOfMeshes,
                        "wafer edges out (gradients)", "SwarmX up (gradients)", "MemoryX in (gradients)"}) {
    auto it = series.find(k);
    if (it == series.end()) continue;
    js.push_back({{"name", it->second.name}, {"bytes", it->second.bytes}});
  }
  out["present"] = true;
  out["series"] = std::move(js);
  out["links"] = std::move(per);
  out["edges"] = std::move(edges.wafers);
  return out;
}

// A text field of run.json, or "" when absent or not text.
std::string run_text(const json& run, const char* key) {
  return run.is_object() && run.contains(key) && run.at(key).is_string() ? run.at(key).get<std::string>() : "";
}

json load(const fs::path& run_dir, const ReportOptions& options);

}  // namespace

json load_report_data(const fs::path& run_dir, const ReportOptions& options) {
  try {
    return load(run_dir, options);
  } catch (const json::exception& e) {
    throw sim::InputError(fmt::format("{}: the run folder's files are not as a wafersim run writes them: {}",
                                      run_dir.string(), e.what()));
  }
}

namespace {

json load(const fs::path& run_dir, const ReportOptions& options) {
  if (!fs::is_directory(run_dir))
    throw sim::InputError(
        fmt::format("{}: not a folder (expected a run folder written by a wafersim command)", run_dir.string()));
  const json run = read_json(run_dir / "run.json", "the run's metadata (is this a run folder?)");
  const json stats = read_json(run_dir / "stats.json", "the run's statistics");
  const fs::path dir = run_dir / "trace";
  if (!fs::exists(dir / "meta.json"))
    throw sim::InputError(
        fmt::format("{}: no trace in this run folder (trace/meta.json); run the command again with --trace windows "
                    "(e.g. wafersim traffic tiny --pattern hotspot --rate 0.2 --trace windows -o {})",
                    run_dir.string(), run_dir.string()));
  const json meta = read_json(dir / "meta.json", "the trace description");
  check_trace_meta(meta, run, dir, options.frames);
  const fs::path meta_path = dir / "meta.json";
  const auto windows = field<std::uint64_t>(meta, "windows", meta_path);
  const auto window_cycles = field<std::uint64_t>(meta, "window_cycles", meta_path);
  const auto end_cycle = field<std::uint64_t>(meta, "end_cycle", meta_path);
  const auto clock = field<double>(meta, "clock_hz", meta_path);

  json out;
  out["format"] = "wafersim-report/1";
  const bool wall_given = run.is_object() && run.contains("wall_seconds") && run.at("wall_seconds").is_number();
  out["run"] = {{"folder", fs::absolute(run_dir).lexically_normal().string()},
                {"command_line", run_text(run, "command_line")},
                {"platform", run_text(run, "platform")},
                {"status", run_text(run, "status")},
                {"version", run_text(run, "wafersim_version")},
                {"wall_seconds", wall_given ? run.at("wall_seconds").get<double>() : 0.0}};
  out["trace"] = {{"clock_hz", clock},
                  {"window_cycles", window_cycles},
                  {"windows", windows},
                  {"end_cycle", end_cycle},
                  {"merges", meta.value("merges", 0)},
                  {"selection", meta.value("selection", json::object())}};
  json files = json::array();
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() &&
        sim::config::invalid_utf8_at(entry.path().filename().string()) == std::string_view::npos)
      files.push_back({{"name", entry.path().filename().string()}, {"bytes", entry.file_size()}});
  std::sort(files.begin(), files.end(), [](const json& a, const json& b) {
    return a.at("name").get<std::string>() < b.at("name").get<std::string>();
  });
  out["trace"]["files"] = std::move(files);
  out["trace"]["timeline"] = meta.value("timeline", json(nullptr));
  out["trace"]["vcd"] = meta.value("vcd", json(nullptr));

  json fabric = json::array();
  if (meta.contains("fabric"))
    for (const auto& w : meta.at("fabric"))
      fabric.push_back(fabric_section(dir, meta, w, windows, window_cycles, end_cycle, options));
  const json& pe_meta = meta.value("pe", json::object());
  const json& sram_meta = meta.value("sram", json::object());
  if (pe_meta.value("recorded", false) && sram_meta.value("recorded", false))
    for (auto& f : fabric) {
      const json* pw = nullptr;
      const json* sw = nullptr;
      for (const auto& w : pe_meta.at("wafers"))
        if (w.at("wafer") == f.at("wafer")) pw = &w;
      for (const auto& w : sram_meta.at("wafers"))
        if (w.at("wafer") == f.at("wafer")) sw = &w;
      if (pw && sw) add_pe(f, dir, meta, *pw, *sw, windows, end_cycle, options);
    }
  const json& energy_meta = meta.value("energy", json::object());
  if (energy_meta.value("recorded", false))
    for (auto& f : fabric)
      for (const auto& w : energy_meta.at("wafers"))
        if (w.at("wafer") == f.at("wafer")) add_energy(f, dir, meta, w, windows);
  out["fabric"] = std::move(fabric);
  out["fabric_absent"] =
      meta.value("fabric_absent", std::string("congestion windows were not traced (--trace windows)"));
  out["links"] = links_section(dir, meta, windows);

  if (meta.contains("steps")) {
    const json steps = read_json(dir / meta.at("steps").value("file", "steps.json"), "the per-step breakdown");
    out["steps"] = {{"present", true}, {"rows", steps.value("steps", json::array())}};
  } else {
    out["steps"] = {{"present", false}, {"reason", "no training steps in this run (a fabric-only run)"}};
  }
  if (meta.contains("phases")) {
    const json phases = read_json(dir / meta.at("phases").value("file", "phases.json"), "the layer phases");
    out["phases"] = {{"present", true}, {"rows", phases.value("phases", json::array())}};
  } else {
    out["phases"] = {{"present", false}, {"reason", "no layer phases in this run (no compiled layers ran)"}};
  }
  auto absent = [&](const char* key) {
    json j = meta.value(key, json::object());
    if (!j.contains("recorded")) j = {{"recorded", false}, {"reason", "not recorded by this run"}};
    return j;
  };
  out["pe"] = absent("pe");
  out["sram"] = absent("sram");
  out["energy"] = absent("energy");
  if (stats.contains("stats") && stats.at("stats").contains("energy"))
    out["energy"]["stats"] = stats.at("stats").at("energy");
  // Statistics the page quotes: each wafer's fabric totals, to show that the windows add up.
  json st = json::object();
  std::function<void(const json&, const std::string&, int)> walk = [&](const json& g, const std::string& path,
                                                                       int depth) {
    if (!g.is_object() || depth > 64) return;
    if (g.contains("fabric") && g.at("fabric").is_object()) {
      const json& f = g.at("fabric");
      st[path] = {{"cycles", g.value("cycles", json(nullptr))},
                  {"wavelets_forwarded", f.value("wavelets_forwarded", json(nullptr))},
                  {"credit_stalls", f.value("credit_stalls", json(nullptr))},
                  {"occupancy_integral", f.value("occupancy_integral", json(nullptr))}};
    }
    for (const auto& [name, child] : g.items())
      if (child.is_object() && name != "fabric") walk(child, path.empty() ? name : path + "." + name, depth + 1);
  };
  if (stats.is_object() && stats.contains("stats")) walk(stats.at("stats"), "", 0);
  out["stats"] = std::move(st);
  return out;
}

}  // namespace

}  // namespace wafersim::app::report

#include "sim/app/report/trace_meta.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/config/input_file.h"
#include "sim/errors.h"

namespace wafersim::app::report {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

constexpr std::uint64_t kDirections = 5;

// Reads fields of one object of meta.json, each error naming the file and the key path.
class Fields {
 public:
  Fields(const json& j, std::string path, const fs::path& file) : j_(j), path_(std::move(path)), file_(file) {
    if (!j_.is_object()) fail("", "expected an object");
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    const std::string where = key.empty() ? path_ : (path_.empty() ? key : path_ + "." + key);
    throw sim::InputError(fmt::format("{}: {}{}{}", file_.string(), where, where.empty() ? "" : ": ", what));
  }
  const json& at(const std::string& key) const {
    if (!j_.contains(key)) fail(key, "missing");
    return j_.at(key);
  }
  std::uint64_t uint(const std::string& key, std::uint64_t lo, std::uint64_t hi) const {
    const json& v = at(key);
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() < lo || v.get<std::uint64_t>() > hi)
      fail(key, fmt::format("expected a whole number in {} .. {}, found {}", lo, hi, v.dump()));
    return v.get<std::uint64_t>();
  }
  std::string text(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_string()) fail(key, fmt::format("expected a string, found {}", v.type_name()));
    return v.get<std::string>();
  }
  const json& array(const std::string& key, std::size_t size) const {
    const json& v = at(key);
    if (!v.is_array() || v.size() != size)
      fail(key, fmt::format("expected a list of {} items, found {}", size,
                            v.is_array() ? fmt::format("{} items", v.size()) : std::string(v.type_name())));
    return v;
  }
  void uints(const std::string& key, std::size_t size) const {
    for (const auto& v : array(key, size))
      if (!v.is_number_unsigned()) fail(key, "expected whole numbers");
  }
  Fields object(const std::string& key) const {
    return Fields(at(key), path_.empty() ? key : path_ + "." + key, file_);
  }
  [[nodiscard]] const json& raw() const { return j_; }

 private:
  const json& j_;
  std::string path_;
  const fs::path& file_;
};

// A table description: a plain file in the trace folder, within the size limit, with `keys`
// keys and at least `values` values (exactly when `exact`).
void check_table(const Fields& tables, const std::string& name, const fs::path& dir, std::size_t keys,
                 std::size_t values, bool exact) {
  const Fields t = tables.object(name);
  const std::string file = t.text("file");
  if (!plain_file_name(file)) t.fail("file", fmt::format("'{}' is not a file name inside the trace folder", file));
  sim::config::check_input_file((dir / file).string(), "the window table", sim::config::kMaxTableBytes);
  for (const char* part : {"keys", "values"}) {
    const json& list = t.at(part);
    if (!list.is_array()) t.fail(part, "expected a list of columns");
    for (const auto& c : list)
      if (!c.is_object() || !c.contains("name") || !c.at("name").is_string())
        t.fail(part, "expected columns with a 'name'");
  }
  if (t.at("keys").size() != keys)
    t.fail("keys", fmt::format("expected {} key columns, found {}", keys, t.at("keys").size()));
  const std::size_t nv = t.at("values").size();
  if (exact ? nv != values : nv < values)
    t.fail("values", fmt::format("expected {}{} value columns, found {}", exact ? "" : "at least ", values, nv));
}

// One wafer's fabric description; returns its number of regions.
std::uint64_t check_fabric(const Fields& w, const Fields& tables, const fs::path& dir) {
  const std::uint64_t width = w.uint("width", 1, 1u << 16), height = w.uint("height", 1, 1u << 16);
  const std::uint64_t size = w.uint("region_size", 1, 1u << 16);
  w.uints("area", 4);
  const json& a = w.at("area");
  const std::uint64_t x0 = a[0], y0 = a[1], x1 = a[2], y1 = a[3];
  if (x0 > x1 || y0 > y1 || x1 >= width || y1 >= height)
    w.fail("area", fmt::format("{} is not a rectangle inside the {} x {} wafer", a.dump(), width, height));
  const std::uint64_t cols = w.uint("cols", 1, kMaxReportCells), rows = w.uint("rows", 1, kMaxReportCells);
  if (cols != (x1 - x0) / size + 1 || rows != (y1 - y0) / size + 1)
    w.fail("cols",
           fmt::format("{} x {} regions do not cover the area {} in regions of {}", cols, rows, a.dump(), size));
  const std::uint64_t cells = cols * rows;
  if (cells > kMaxReportCells) w.fail("cols", fmt::format("more than {} regions", kMaxReportCells));
  w.uint("colors", 1, kMaxReportColors);
  if (!w.at("by_color").is_boolean()) w.fail("by_color", "expected true or false");
  w.uints("routers", cells);
  for (const auto& l : w.array("links", cells))
    if (!l.is_array() || l.size() != kDirections ||
        !std::all_of(l.begin(), l.end(), [](const json& v) { return v.is_number_unsigned(); }))
      w.fail("links", fmt::format("expected {} whole numbers per region", kDirections));
  const std::string table = w.text("table");
  if (!tables.raw().contains(table)) w.fail("table", fmt::format("no table '{}' in 'tables'", table));
  check_table(tables, table, dir, w.at("by_color").get<bool>() ? 4 : 3, 3, false);
  return cells;
}

// The PE and SRAM windows of one wafer: on `fabric`'s regions.
void check_pe(const Fields& pe, const Fields& sram, const json& fabric, const Fields& tables, const fs::path& dir) {
  for (const char* k : {"cols", "rows", "region_size", "area"})
    if (pe.at(k) != fabric.at(k)) pe.fail(k, "the PE windows are not on the fabric's regions");
  const std::uint64_t cells = fabric.at("cols").get<std::uint64_t>() * fabric.at("rows").get<std::uint64_t>();
  pe.uints("pes", cells);
  const json& causes = pe.array("stall_causes", pe.at("stall_causes").size());
  if (!causes.is_array() || causes.size() > 64 ||
      !std::all_of(causes.begin(), causes.end(), [](const json& c) { return c.is_string(); }))
    pe.fail("stall_causes", "expected a list of at most 64 names");
  pe.at("totals");
  pe.at("pes_loaded");
  sram.at("capacity_bytes");
  const std::string pe_table = pe.text("table"), sram_table = sram.text("table");
  if (!tables.raw().contains(pe_table)) pe.fail("table", fmt::format("no table '{}' in 'tables'", pe_table));
  if (!tables.raw().contains(sram_table)) sram.fail("table", fmt::format("no table '{}' in 'tables'", sram_table));
  check_table(tables, pe_table, dir, 2, 6 + causes.size(), true);
  check_table(tables, sram_table, dir, 2, 5, true);
}

// The wafer entry of `list` (pe.wafers or sram.wafers) for wafer `id`, or null.
const json* wafer_entry(const json& list, const json& id) {
  if (!list.is_array()) return nullptr;
  for (const auto& w : list)
    if (w.is_object() && w.contains("wafer") && w.at("wafer") == id) return &w;
  return nullptr;
}

void check_links(const Fields& m, const Fields& tables, const fs::path& dir) {
  if (!m.raw().contains("links") || !tables.raw().contains("links")) return;
  const json& list = m.at("links");
  if (!list.is_array() || list.size() > (1u << 20)) m.fail("links", "expected a list of at most 2^20 links");
  for (const auto& l : list)
    if (!l.is_object() || !l.contains("label") || !l.at("label").is_string() || !l.contains("group") ||
        !l.at("group").is_string() || !l.contains("bandwidth_bps") || !l.contains("bytes"))
      m.fail("links", "expected links with 'label', 'group', 'bandwidth_bps' and 'bytes'");
  check_table(tables, "links", dir, 1, 1, false);
}

// The co-simulated wafers' edges: per wafer its table (edge-w<N>), with the key wafer and the
// values wavelets_in and wavelets_out first.
void check_edge(const Fields& m, const Fields& tables, const fs::path& dir, const fs::path& file) {
  if (!m.raw().contains("edge")) return;
  const Fields e = m.object("edge");
  if (!e.raw().contains("recorded") || e.raw().at("recorded") != true) return;
  const json& list = e.at("wafers");
  if (!list.is_array() || list.size() > 1024) e.fail("wafers", "expected a list of at most 1024 wafers");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Fields w(list[i], fmt::format("edge.wafers[{}]", i), file);
    w.uint("wafer", 0, 1023);
    const std::string table = w.text("table");
    if (!tables.raw().contains(table)) w.fail("table", fmt::format("no table '{}' in 'tables'", table));
    check_table(tables, table, dir, 1, 2, false);
    const json& values = tables.raw().at(table).at("values");
    if (values[0].at("name") != "wavelets_in" || values[1].at("name") != "wavelets_out")
      w.fail("table", fmt::format("table '{}' does not start with the values wavelets_in, wavelets_out", table));
  }
}

void check_side_file(const Fields& m, const char* key) {
  if (!m.raw().contains(key)) return;
  const Fields f = m.object(key);
  if (f.raw().contains("file") && (!f.raw().at("file").is_string() || !plain_file_name(f.text("file"))))
    f.fail("file", "expected a file name inside the trace folder");
}

}  // namespace

bool plain_file_name(const std::string& name) {
  return !name.empty() && name.size() <= 255 && name.find('/') == std::string::npos && name[0] != '.' &&
         name.find('\0') == std::string::npos;
}

void check_trace_meta(const json& meta, const json& run, const fs::path& trace_dir, std::uint32_t frames) {
  const fs::path file = trace_dir / "meta.json";
  const Fields m(meta, "", file);
  if (m.text("format") != "wafersim-trace/1")
    m.fail("format", fmt::format("unknown trace format '{}' (expected wafersim-trace/1)", m.text("format")));
  const json none = json(nullptr);
  const json& ours = run.contains("run_id") ? run.at("run_id") : none;
  const json& theirs = meta.contains("run_id") ? meta.at("run_id") : none;
  if (ours != theirs)
    m.fail("run_id", fmt::format("this trace was written by another run ({}; run.json is run {}): the folder "
                                 "holds a stale trace, run the command again with --force",
                                 theirs.dump(), ours.dump()));
  const std::uint64_t windows = m.uint("windows", 0, kMaxReportWindows);
  m.uint("window_cycles", windows ? 1 : 0, ~std::uint64_t{0});
  m.uint("end_cycle", 0, ~std::uint64_t{0});
  const json& clock = m.at("clock_hz");
  if (!clock.is_number() || !(clock.get<double>() > 0) || clock.get<double>() > 1e15)
    m.fail("clock_hz", fmt::format("expected a clock frequency in Hz, found {}", clock.dump()));
  const Fields tables = m.object("tables");
  const std::uint64_t frame_count = std::min<std::uint64_t>(windows, std::max<std::uint32_t>(frames, 1));
  std::uint64_t bytes = windows * 8 * 16;
  if (meta.contains("fabric")) {
    const json& fabric = m.at("fabric");
    if (!fabric.is_array() || fabric.size() > 1024) m.fail("fabric", "expected a list of at most 1024 wafers");
    const json& pe = meta.contains("pe") ? meta.at("pe") : json::object();
    const json& sram = meta.contains("sram") ? meta.at("sram") : json::object();
    const bool with_pe = pe.is_object() && pe.value("recorded", false) == true && sram.is_object() &&
                         sram.value("recorded", false) == true;
    for (std::size_t i = 0; i < fabric.size(); ++i) {
      const Fields w(fabric[i], fmt::format("fabric[{}]", i), file);
      const std::uint64_t cells = check_fabric(w, tables, trace_dir);
      const std::uint64_t colors = w.at("by_color").get<bool>() ? w.at("colors").get<std::uint64_t>() : 1;
      bytes += frame_count * cells * 8 * (kDirections + 6) + cells * kDirections * colors * 64;
      if (!with_pe) continue;
      const json* pw = wafer_entry(pe.at("wafers"), w.at("wafer"));
      const json* sw = wafer_entry(sram.at("wafers"), w.at("wafer"));
      if (pw && sw) check_pe(Fields(*pw, "pe", file), Fields(*sw, "sram", file), fabric[i], tables, trace_dir);
    }
  }
  check_links(m, tables, trace_dir);
  check_edge(m, tables, trace_dir, file);
  check_side_file(m, "steps");
  check_side_file(m, "phases");
  if (bytes > kMaxReportBytes)
    throw sim::InputError(
        fmt::format("{}: a report of this trace would need about {} MiB at {} frames (limit {} "
                    "MiB); ask for fewer --frames",
                    file.string(), bytes >> 20, frames, kMaxReportBytes >> 20));
}

}  // namespace wafersim::app::report

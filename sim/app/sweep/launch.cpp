#include "sim/app/sweep/launch.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "sim/config/diagnostics.h"
#include "sim/config/input_file.h"

namespace wafersim::app::sweep {
namespace fs = std::filesystem;

nlohmann::ordered_json LaunchSummary::to_json() const {
  nlohmann::ordered_json j;
  j["backend"] = backend;
  if (!job.empty()) j["job"] = job;
  j["points"] = total;
  j["finished_before"] = before;
  j["failed_before"] = failed_before;
  j["ok"] = ok;
  j["failed"] = failed;
  j["left"] = left;
  j["failed_points"] = failed_points;
  j["missing_metrics"] = missing_metrics;
  j["wall_seconds"] = wall_seconds;
  return j;
}

std::string LaunchSummary::text(const std::string& name, const std::string& dir) const {
  std::string s = fmt::format("sweep {}: {} points: {} ok, {} failed", name, total, ok, failed);
  if (before) s += fmt::format(", {} finished before", before);
  if (failed_before) s += fmt::format(" ({} of them without success; --retry-failed runs them again)", failed_before);
  if (left) s += fmt::format(", {} not finished", left);
  s += fmt::format(" ({:.1f} s)\n", wall_seconds);
  if (!failed_points.empty()) {
    const auto& sorted = failed_points;
    std::string list;
    for (std::size_t i = 0; i < sorted.size() && i < 20; ++i) list += (i ? ", " : "") + std::to_string(sorted[i]);
    if (sorted.size() > 20) list += ", ...";
    s += fmt::format("  failed points: {} (see {}/points/NNNNN/status.json)\n", list, dir);
  }
  for (const auto& m : missing_metrics) s += fmt::format("  warning: metric {}\n", m);
  return s;
}

std::vector<std::size_t> pending_points(const Plan& plan, const SweepDir& dir, bool retry_failed,
                                        LaunchSummary& summary) {
  std::vector<std::size_t> out;
  summary.total = plan.points().size();
  summary.before = summary.failed_before = 0;
  for (const auto& p : plan.points()) {
    auto s = dir.state(p.index);
    if (s.state != SweepDir::State::Done || (retry_failed && s.status != kStatusOk)) {
      out.push_back(p.index);
    } else {
      ++summary.before;
      if (s.status != kStatusOk) ++summary.failed_before;
    }
  }
  return out;
}

std::vector<std::string> point_command(const std::string& exe, const std::string& spec, const SweepDir& dir,
                                       const std::string& index, bool retry_failed) {
  std::vector<std::string> argv{exe, "sweep", spec, "--point", index, "--out", dir.root().string()};
  if (retry_failed) argv.emplace_back("--retry-failed");
  return argv;
}

PointReport report_point(const Plan& plan, const SweepDir& dir, std::size_t index) {
  PointReport r;
  r.status = dir.state(index).status;
  r.detail = describe(plan.points().at(index));
  try {
    auto st = nlohmann::json::parse(sim::config::read_input_file((dir.point(index) / "status.json").string(),
                                                                 "a point's status", sim::config::kMaxJsonBytes));
    r.wall_seconds = st.value("wall_seconds", 0.0);
    if (r.status == kStatusOk && st.contains("missing_metrics"))
      for (const auto& m : st["missing_metrics"]) r.missing_metrics.push_back(m.get<std::string>());
    if (r.status != kStatusOk) {
      r.detail += fmt::format("; exit code {}", st.value("exit_code", -1));
      std::string tail = st.value("stderr_tail", "");
      auto nl = tail.rfind('\n');
      if (!tail.empty()) r.detail += "; " + (nl == std::string::npos ? tail : tail.substr(nl + 1));
    }
  } catch (const nlohmann::json::exception&) {
    r.detail += "; status.json unreadable";
  } catch (const sim::config::ConfigError&) {
    r.detail += "; status.json unreadable";
  }
  return r;
}

void tally(const PointReport& report, std::size_t index, LaunchSummary& summary) {
  if (report.status == kStatusOk) {
    ++summary.ok;
  } else {
    ++summary.failed;
    auto& f = summary.failed_points;
    f.insert(std::upper_bound(f.begin(), f.end(), index), index);
  }
  summary.missing_metrics.insert(report.missing_metrics.begin(), report.missing_metrics.end());
}

void watch(const Plan& plan, const SweepDir& dir, const std::vector<std::size_t>& pending, SweepProgress& progress,
           const std::function<bool()>& active, std::chrono::milliseconds interval, LaunchSummary& summary) {
  // A point counts as finished now when its marker appears or changes.
  std::map<std::size_t, fs::file_time_type> before;
  std::vector<std::size_t> open = pending;
  for (std::size_t i : pending) {
    std::error_code ec;
    auto t = fs::last_write_time(dir.point(i) / "done", ec);
    if (!ec) before[i] = t;
  }
  // `settle`: the backend is done, so a marker left unchanged by a point no one holds was
  // written by another sweep of the same folder (which ran the point while this one waited).
  auto scan = [&](bool settle) {
    std::size_t running = 0;
    std::vector<std::size_t> still;
    for (std::size_t i : open) {
      std::error_code ec;
      auto t = fs::last_write_time(dir.point(i) / "done", ec);
      auto it = before.find(i);
      if (!ec && (it == before.end() || it->second != t || (settle && !lock_held(dir.point(i))))) {
        PointReport r = report_point(plan, dir, i);
        tally(r, i, summary);
        progress.finished(i, r.status, r.wall_seconds, r.detail);
        continue;
      }
      if (lock_held(dir.point(i))) ++running;
      still.push_back(i);
    }
    open.swap(still);
    progress.set_running(running);
    progress.redraw();
    return running;
  };
  auto last_asked = std::chrono::steady_clock::now();
  bool alive = active();
  std::size_t running = 0;
  // Points another sweep of the same folder holds are waited for once this sweep's own are done.
  while ((alive || running > 0) && !open.empty()) {
    running = scan(false);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (alive && std::chrono::steady_clock::now() - last_asked >= interval) {
      alive = active();
      last_asked = std::chrono::steady_clock::now();
    }
  }
  scan(true);
  summary.left = open.size();
}

}  // namespace wafersim::app::sweep

#include "sim/app/sweep/sweep_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include "sim/app/run_dir.h"
#include "sim/config/input_file.h"
#include "sim/errors.h"

namespace wafersim::app::sweep {
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p, const std::string& what) {
  return sim::config::read_input_file(p.string(), what, sim::config::kMaxJsonBytes);
}

}  // namespace

fs::path SweepDir::point(std::size_t index) const { return root_ / "points" / fmt::format("{:05}", index); }

void SweepDir::prepare(const Plan& plan) const {
  std::error_code ec;
  fs::create_directories(root_ / "points", ec);
  if (ec)
    throw sim::InputError(fmt::format("--out {}: cannot create the sweep folder: {}", root_.string(), ec.message()));
  auto fresh = plan.to_json();
  if (fs::exists(plan_file())) {
    auto old = read_plan();
    if (old.value("fingerprint", "") != plan.fingerprint())
      throw sim::InputError(fmt::format(
          "{} holds another sweep ({} points, '{}'); its points differ from those of {} ({} points), so finished "
          "results would mix: choose another --out or remove the folder",
          root_.string(), old.contains("points") ? old["points"].size() : 0, old.value("spec", "?"), plan.spec().file,
          plan.points().size()));
    if (old == nlohmann::json::parse(fresh.dump())) return;
  }
  write_file_atomic(plan_file(), fresh.dump(1) + "\n");
}

nlohmann::json SweepDir::read_plan() const {
  if (!fs::exists(plan_file()))
    throw sim::InputError(fmt::format("{}: not a sweep folder (no sweep.json)", root_.string()));
  try {
    return nlohmann::json::parse(read_text(plan_file(), "the sweep's plan"));
  } catch (const nlohmann::json::exception& e) {
    throw sim::InputError(fmt::format("{}: unreadable: {}", plan_file().string(), e.what()));
  }
}

bool lock_held(const fs::path& point_dir) {
  int fd = ::open((point_dir / ".lock").c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  bool held = ::fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
  ::close(fd);
  return held;
}

SweepDir::PointState SweepDir::state(std::size_t index) const {
  fs::path dir = point(index);
  PointState s;
  std::error_code ec;
  if (fs::exists(dir / "done", ec)) {
    s.state = State::Done;
    s.status = read_text(dir / "done", "a point's marker").substr(0, 256);
    while (!s.status.empty() && (s.status.back() == '\n' || s.status.back() == ' ')) s.status.pop_back();
    return s;
  }
  if (lock_held(dir)) s.state = State::Running;
  return s;
}

}  // namespace wafersim::app::sweep

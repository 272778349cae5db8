#include "platforms/training/cosim_ranks.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "sim/parallel/wire.h"
#include "sim/stats/formatters.h"
#include "sim/stats/recorded.h"

namespace wafersim::platforms::training {
namespace {

struct RankUse {
  std::uint64_t busy_ns = 0, barrier_ns = 0, wait_ns = 0, messages = 0, windows = 0;
  std::uint32_t threads = 1;
};

RankUse rank_use(const platforms::Cluster& cluster) {
  RankUse u;
  if (const auto* team = cluster.team()) {
    u.threads = team->size();
    for (const auto& m : team->times()) {
      u.busy_ns += m.busy_ns;
      u.barrier_ns += m.wait_ns;
    }
  }
  if (const auto* t = cluster.transport()) {
    u.wait_ns = t->time().wait_ns;
    u.messages = t->time().messages;
  }
  u.windows = cluster.windows();
  return u;
}

void put(sim::parallel::Writer& w, const RankUse& u) {
  for (std::uint64_t v : {u.busy_ns, u.barrier_ns, u.wait_ns, u.messages, u.windows}) w.put(v);
  w.put(u.threads);
}

RankUse get_use(sim::parallel::Reader& r) {
  RankUse u;
  for (std::uint64_t* v : {&u.busy_ns, &u.barrier_ns, &u.wait_ns, &u.messages, &u.windows}) *v = r.get<std::uint64_t>();
  u.threads = r.get<std::uint32_t>();
  return u;
}

// A distribution is written as its summary, which add_recorded cannot restore as one: no
// wafer of a co-simulated cluster has one, and none may cross ranks unnoticed.
void check_crossable(const sim::stats::Group& g) {
  for (const auto& s : g.stats())
    if (s.kind() == sim::stats::Stat::Kind::Distribution)
      throw std::logic_error(fmt::format("statistic {}.{}: a distribution cannot cross ranks", g.path(), s.name()));
  for (const auto& c : g.groups()) check_crossable(*c);
}

nlohmann::ordered_json use_json(unsigned rank, const sim::parallel::ItemRange& wafers, const RankUse& u) {
  nlohmann::ordered_json j;
  j["rank"] = rank;
  j["wafers"] = {wafers.begin, wafers.end};
  j["threads"] = u.threads;
  j["windows"] = u.windows;
  j["busy_seconds"] = static_cast<double>(u.busy_ns) * 1e-9;
  j["barrier_wait_seconds"] = static_cast<double>(u.barrier_ns) * 1e-9;
  j["message_wait_seconds"] = static_cast<double>(u.wait_ns) * 1e-9;
  j["messages"] = u.messages;
  return j;
}

}  // namespace

void send_outcomes(platforms::Cluster& cluster, const std::vector<WaferOutcome>& local,
                   const sim::stats::Group& stats) {
  check_crossable(stats);
  sim::parallel::Writer w;
  for (const auto& o : local) {
    w.put<std::uint8_t>(o.finished ? 1 : 0);
    w.put_vector(o.losses);
    w.put(o.checked);
  }
  w.put_string(sim::stats::to_ordered_json(stats).dump());
  w.put_string(sim::stats::describe_json(stats).dump());
  put(w, rank_use(cluster));
  cluster.transport()->send(0, w.bytes());
}

nlohmann::ordered_json gather_outcomes(platforms::Cluster& cluster, std::vector<WaferOutcome>& all,
                                       sim::stats::Group& stats) {
  const unsigned ranks = cluster.ranks();
  const std::size_t n = all.size();
  nlohmann::ordered_json members = nlohmann::ordered_json::array();
  members.push_back(use_json(0, cluster.local_wafers(), rank_use(cluster)));
  for (unsigned r = 1; r < ranks; ++r) {
    const std::string bytes = cluster.transport()->receive(r);
    sim::parallel::Reader rd(bytes);
    const auto group = sim::parallel::rank_items(n, ranks, r);
    for (std::size_t e = group.begin; e < group.end; ++e) {
      all[e].finished = rd.get<std::uint8_t>() != 0;
      all[e].losses = rd.get_vector<double>();
      all[e].checked = rd.get<std::uint64_t>();
    }
    const auto values = nlohmann::ordered_json::parse(rd.get_string());
    const auto descriptions = nlohmann::json::parse(rd.get_string());
    // Rank 0 holds the cluster's links, so it made the edge-link groups of these wafers first;
    // in one process they follow each wafer's own statistics, which come from rank r.
    std::vector<std::pair<sim::stats::Group*, std::size_t>> held;
    for (std::size_t e = group.begin; e < group.end; ++e) {
      sim::stats::Group& g = stats.group("cluster").group(fmt::format("wafer{}", e));
      held.emplace_back(&g, g.groups().size());
    }
    sim::stats::add_recorded(stats, values, descriptions, "");
    for (const auto& [g, before] : held) g->move_first_groups_last(before);
    members.push_back(use_json(r, group, get_use(rd)));
  }
  nlohmann::ordered_json j;
  j["ranks"] = ranks;
  j["members"] = std::move(members);
  return j;
}

}  // namespace wafersim::platforms::training

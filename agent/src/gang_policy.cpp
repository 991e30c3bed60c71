#include "gang_policy.h"

#include <algorithm>
#include <cmath>

#include "launchers/launcher.h"
#include "ringmaster/job/rank_phase.h"

namespace ringmaster::agent {
namespace {

bool isFirstCauseKind(const proto::JobFailure& failure) { return failure.kind() != "exited"; }

std::string seconds(double value) { return std::to_string(std::lround(value)) + " s"; }

// "0-2", "0, 2" or "1": the ranks of a list, for a cause line.
std::string rankList(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  const bool contiguous =
      ranks.size() > 2 && ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size());
  if (contiguous) return std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  std::string out;
  for (int rank : ranks) out += (out.empty() ? "" : ", ") + std::to_string(rank);
  return out;
}

bool isCollectivePhase(const std::string& name) {
  const auto phase = job::phaseNamed(name);
  return phase && job::isCollective(*phase);
}

}  // namespace

size_t rootCause(const std::vector<proto::JobFailure>& failures) {
  for (size_t i = 0; i < failures.size(); ++i) {
    if (failures[i].kind() == "client_restart") return i;
  }
  // An agent that said it shuts down is lost a moment later: its own word is the cause.
  auto saidItStops = [&](const std::string& agent) {
    return std::any_of(failures.begin(), failures.end(), [&](const proto::JobFailure& f) {
      return f.kind() == "agent_stopped" && f.agent() == agent;
    });
  };
  for (size_t i = 0; i < failures.size(); ++i) {
    const bool explained = failures[i].kind() == "agent_lost" && saidItStops(failures[i].agent());
    if (isFirstCauseKind(failures[i]) && !explained) return i;
  }
  return 0;
}

double hangTimeout(const proto::RestartPolicy& policy,
                   const std::vector<std::pair<std::string, proto::RankProgress>>& ranks,
                   double floor_seconds) {
  double slowest = 0;
  for (const auto& [agent, rank] : ranks) slowest = std::max(slowest, rank.slowest_step_seconds());
  return hangTimeout(policy, slowest, floor_seconds);
}

double hangTimeout(const proto::RestartPolicy& policy, double slowest_step_seconds,
                   double floor_seconds) {
  if (policy.hang_timeout_seconds() > 0) return policy.hang_timeout_seconds();
  return std::max(floor_seconds, 10 * slowest_step_seconds);
}

double stallReportSeconds(const proto::RestartPolicy& policy, double floor_seconds) {
  const double least =
      policy.hang_timeout_seconds() > 0 ? policy.hang_timeout_seconds() : floor_seconds;
  return least / 4;
}

double slowestAfter(double slowest, double gap, double floor_seconds) {
  const double suspicion = std::max(floor_seconds, 10 * slowest) / 2;
  if (gap >= suspicion) return slowest;
  return std::max(gap, slowest * kSlowestStepKeptPerStep);
}

namespace {

// A rank idle for `idle_limit` makes the verdict; its cause says "<rank> <verb>: ...".
std::optional<proto::JobFailure> judgeHang(
    const std::vector<std::pair<std::string, proto::RankProgress>>& ranks, double idle_limit,
    double timeout, const std::string& verb) {
  using Entry = std::pair<std::string, proto::RankProgress>;
  // 0: stopped; 1: working (a compute-like phase, or busy on the CPU); 2: waiting for the others.
  auto rankOrder = [](const Entry& entry) {
    const proto::RankProgress& rank = entry.second;
    if (rank.activity().rfind("stopped", 0) == 0) return 0;
    if (rank.phase().empty()) return rank.activity() == "computing" ? 1 : 2;
    return isCollectivePhase(rank.phase()) ? 2 : 1;
  };
  const Entry* culprit = nullptr;
  bool hung = false;
  for (const auto& entry : ranks) {
    const proto::RankProgress& rank = entry.second;
    if (rank.step() < 0) continue;
    hung = hung || rank.idle_seconds() >= idle_limit;
    if (!culprit || rankOrder(entry) < rankOrder(*culprit) ||
        (rankOrder(entry) == rankOrder(*culprit) &&
         rank.idle_seconds() > culprit->second.idle_seconds())) {
      culprit = &entry;
    }
  }
  if (!hung || !culprit) return std::nullopt;
  const proto::RankProgress& rank = culprit->second;
  proto::JobFailure failure;
  failure.set_kind("hung");
  failure.set_rank(rank.rank());
  failure.set_agent(culprit->first);
  failure.set_step(rank.step());
  std::string cause =
      "rank " + std::to_string(rank.rank()) + " on " + culprit->first + " " + verb + ": ";
  if (rank.phase().empty()) {
    cause += rank.activity() + " at step " + std::to_string(rank.step()) + ", no new step for " +
             seconds(rank.idle_seconds());
  } else {
    const bool stopped = rankOrder(*culprit) == 0;
    cause += (stopped ? rank.activity() : std::string("stuck")) + " in " + rank.phase() +
             " at step " + std::to_string(rank.phase_step()) + " for " +
             seconds(rank.phase_seconds());
  }
  // The others, grouped by where they are: "ranks 0-2 waiting in allreduce".
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (const auto& [agent, other] : ranks) {
    if (&other == &rank) continue;
    std::string where;
    if (!other.phase().empty()) {
      where = (isCollectivePhase(other.phase()) ? "waiting in " : "in ") + other.phase();
    } else if (other.activity() == "waiting") {
      where = "waiting";
    } else {
      continue;
    }
    auto group =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == where; });
    if (group == groups.end()) group = groups.insert(groups.end(), {where, {}});
    group->second.push_back(other.rank());
  }
  for (const auto& [where, members] : groups) {
    cause +=
        "; rank" + std::string(members.size() > 1 ? "s " : " ") + rankList(members) + " " + where;
  }
  cause += " (hang timeout " + seconds(timeout) + ")";
  failure.set_cause(cause);
  return failure;
}

}  // namespace

std::optional<proto::JobFailure> hangVerdict(
    const std::vector<std::pair<std::string, proto::RankProgress>>& ranks, double timeout) {
  return judgeHang(ranks, timeout, timeout, "hung");
}

std::optional<proto::JobFailure> hangSuspicion(
    const std::vector<std::pair<std::string, proto::RankProgress>>& ranks, double timeout) {
  return judgeHang(ranks, timeout / 2, timeout, "may be hung");
}

std::string hangAction(const proto::RestartPolicy& policy, proto::Launcher launcher) {
  if (!policy.on_hang().empty()) return policy.on_hang();
  // A launcher whose ranks report their phase tells a hang from a pause (launchers/launcher.h).
  const Launcher* contract = launcherFor(launcher);
  const bool sees_inside = contract != nullptr && contract->reportsPhase();
  if (sees_inside || policy.hang_timeout_seconds() > 0) return "restart";
  return "warn";
}

NextAttempt planNextAttempt(const std::vector<proto::GangMember>& current,
                            const std::set<std::string>& lost, const std::string& failed_agent,
                            const proto::RestartPolicy& policy, int original_agents,
                            uint32_t restarts_used) {
  NextAttempt next;
  if (restarts_used >= policy.max_restarts()) {
    next.refused = policy.max_restarts() == 0
                       ? "the job has no restarts (restart.max_restarts is 0)"
                       : "all " + std::to_string(policy.max_restarts()) + " restarts are used";
    return next;
  }
  const int needed = policy.min_nodes() > 0 ? policy.min_nodes() : original_agents;
  for (const auto& member : current) {
    if (lost.count(member.agent())) {
      next.left_out.push_back(member.agent());
    } else {
      next.members.push_back(member);
    }
  }
  if (policy.exclude_failed_hosts() && !failed_agent.empty() &&
      static_cast<int>(next.members.size()) > needed) {
    auto failed =
        std::find_if(next.members.begin(), next.members.end(),
                     [&](const proto::GangMember& m) { return m.agent() == failed_agent; });
    if (failed != next.members.end()) {
      next.left_out.push_back(failed_agent);
      next.members.erase(failed);
    }
  }
  if (static_cast<int>(next.members.size()) < needed) {
    next.refused = std::to_string(next.members.size()) + " of the job's agents can go on and " +
                   (policy.min_nodes() > 0 ? "restart.min_nodes is " + std::to_string(needed)
                                           : "the job needs all " + std::to_string(needed) +
                                                 " (set restart.min_nodes to go on with fewer)");
    next.members.clear();
    next.too_few_agents = true;
  }
  return next;
}

Result<proto::JobLaunch> launchForAttempt(const proto::JobLaunch& previous,
                                          const proto::GangRestart& restart, uint32_t attempt,
                                          const std::string& agent) {
  proto::JobLaunch launch = previous;
  launch.clear_ranks();
  launch.clear_gang();
  int world = 0;
  int group_rank = -1;
  for (int g = 0; g < restart.members_size(); ++g) {
    const proto::GangMember& member = restart.members(g);
    if (member.agent() == agent) {
      group_rank = g;
      for (int local = 0; local < member.ranks(); ++local) {
        proto::RankAssignment* rank = launch.add_ranks();
        rank->set_rank(world + local);
        rank->set_local_rank(local);
      }
    }
    world += member.ranks();
    *launch.add_gang() = member;
  }
  if (group_rank < 0) {
    return notFound("agent '" + agent + "' is not in attempt " + std::to_string(attempt));
  }
  launch.set_attempt(attempt);
  launch.set_world_size(world);
  launch.set_group_rank(group_rank);
  launch.set_group_world_size(restart.members_size());
  launch.set_master_addr(restart.master_addr());
  launch.set_master_port(restart.master_port());
  launch.set_rendezvous_endpoint(restart.members(0).endpoint());
  launch.set_rendezvous_server_key(restart.members(0).server_key());
  return launch;
}

}  // namespace ringmaster::agent

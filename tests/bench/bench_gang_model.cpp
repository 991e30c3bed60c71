// bench_gang_model: the gang beyond what fits on one machine (gang_tree.h). bench_scale measures
// real agents up to 256; this models 1,000 and 10,000 from the tree's layout and the one cost
// that still grows with the gang: the reports of every agent below, which the root's children
// send it (those that changed each beat, all of them every tenth). Their encoding and decoding is
// timed here on real GangMessages, beside the star's leader of the same gang, which would decode
// every agent's own beat twice a second. Usage: bench_gang_model [AGENTS ...] (default 256 1000
// 10000).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gang_tree.h"
#include "ringmaster/protocol/ringmaster.pb.h"

using namespace ringmaster;

namespace {

constexpr int kRanksPerAgent = 8;        // an 8-GPU host
constexpr double kTreeBeatsPerS = 1;     // kTreeHeartbeatEvery
constexpr double kStarBeatsPerS = 2;     // kHeartbeatEvery
constexpr double kLostAfterS = 4;        // kLostAfter
constexpr double kQuickReportS = 0.05;   // kQuickReport
constexpr double kFullReportEvery = 10;  // kFullReportEvery

std::string agentName(size_t i) {
  char name[32];
  std::snprintf(name, sizeof name, "gpu-host-%05zu", i);
  return name;
}

proto::RankProgress progress(int rank) {
  proto::RankProgress p;
  p.set_rank(rank);
  p.set_step(81234);
  p.set_idle_seconds(0.2);
  p.set_activity("computing");
  p.set_slowest_step_seconds(0.41);
  p.set_phase("compute");
  p.set_phase_seconds(0.1);
  p.set_phase_step(81235);
  return p;
}

// An agent's beat: its own ranks, and in a tree its reports of `below` agents (steady state:
// none stalled).
std::string beat(size_t below) {
  proto::GangMessage message;
  message.set_job_id("train-261129-170000-0123456789abcdef");
  message.set_from_agent(agentName(1));
  message.set_attempt(1);
  proto::GangHeartbeat* heartbeat = message.mutable_heartbeat();
  heartbeat->set_state(proto::RUNNING);
  for (int r = 0; r < kRanksPerAgent; ++r) *heartbeat->add_ranks() = progress(r);
  for (size_t i = 0; i < below; ++i) {
    proto::GangReport* report = heartbeat->add_below();
    report->set_agent(agentName(i + 2));
    report->set_attempt(1);
    report->set_state(proto::RUNNING);
    report->set_slowest_step_seconds(0.41);
  }
  return message.SerializeAsString();
}

// Seconds to decode `bytes` once, the best of a few tries.
double decodeSeconds(const std::string& bytes) {
  double best = 1e9;
  for (int run = 0; run < 5; ++run) {
    const int times = std::max(1, static_cast<int>(200000 / (bytes.size() + 1)));
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < times; ++i) {
      proto::GangMessage message;
      if (!message.ParseFromString(bytes)) std::abort();
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, s / times);
  }
  return best;
}

// Levels below the root, where the last member in line sits.
size_t depthOf(size_t agents) {
  const std::vector<bool> none(agents, false);
  size_t depth = 0;
  for (auto up = agent::treePlace(agents - 1, none, agent::kGangFanout).parent; up;
       up = agent::treePlace(*up, none, agent::kGangFanout).parent) {
    ++depth;
  }
  return depth;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoul(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {256, 1000, 10000};
  const std::string plain = beat(0);
  const double plain_s = decodeSeconds(plain);
  for (size_t agents : sizes) {
    if (agents < 2) continue;
    // The root hears its children, each reporting on its whole subtree.
    const size_t root_children = agent::rootChildren(agent::kGangFanout);
    const size_t below_child = (agents - 1 + root_children - 1) / root_children - 1;
    const std::string child_beat = beat(below_child);
    // A beat carries only the reports that changed, all of them every kFullReportEvery beats:
    // while nothing changes the root decodes a full beat a tenth of the time and a plain one
    // otherwise; "full" is every beat full (everything below changing at once, every second).
    const double full_ms_per_s =
        1000 * kTreeBeatsPerS * static_cast<double>(root_children) * decodeSeconds(child_beat);
    const double root_ms_per_s = full_ms_per_s / kFullReportEvery +
                                 1000 * kTreeBeatsPerS * static_cast<double>(root_children) *
                                     plain_s * (1 - 1.0 / kFullReportEvery);
    const double star_ms_per_s = 1000 * kStarBeatsPerS * static_cast<double>(agents - 1) * plain_s;
    // Messages a second at the leader: beats in and their answers out, and libzmq's pings and
    // pongs on the two connections each contact has (one ping a second each way).
    const double tree_messages = static_cast<double>(root_children) * (2 * kTreeBeatsPerS + 4);
    const double star_messages = static_cast<double>(agents - 1) * (2 * kStarBeatsPerS + 4);
    const size_t depth = depthOf(agents);
    std::printf(
        "RESULT agents=%zu depth=%zu root_contacts=%zu inner_contacts=%zu "
        "root_beat_bytes=%zu root_decode_ms_per_s=%.3f root_full_decode_ms_per_s=%.3f "
        "star_leader_decode_ms_per_s=%.3f "
        "ratio_vs_star=%.3f root_messages_per_s=%.0f star_leader_messages_per_s=%.0f "
        "loss_found_within_s=%.0f news_hops=%zu change_to_leader_s=%.2f\n",
        agents, depth, root_children, agent::kGangFanout + 1, child_beat.size(), root_ms_per_s,
        full_ms_per_s, star_ms_per_s, star_ms_per_s > 0 ? root_ms_per_s / star_ms_per_s : 0.0,
        tree_messages, star_messages, kLostAfterS, 2 * depth, depth * kQuickReportS);
  }
  return 0;
}

#include "gang_coordinator.h"

#include <zmq.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "gang_policy.h"
#include "ringmaster/protocol/codec.h"
#include "ringmaster/security/keys.h"
#include "ringmaster/util/wall_clock.h"

namespace ringmaster::agent {
namespace {

constexpr auto kHeartbeatEvery = std::chrono::milliseconds(500);
// A tree's agents beat half as often: a beat and its answer are half of what a contact costs,
// and a lost agent is still found after kLostAfter of silence (news goes at once either way).
constexpr auto kTreeHeartbeatEvery = std::chrono::seconds(1);
constexpr auto kFirstResend = std::chrono::milliseconds(5);  // doubling up to kHeartbeatEvery
constexpr auto kLostAfter = std::chrono::seconds(4);
// A peer silent for kLostAfter whose connection is up (its process answers libzmq's heartbeats:
// not stopped, not gone, not cut off) or still in a handshake its host accepted is only busy,
// e.g. on a host where a thousand ranks start: it is lost after this long.
constexpr auto kBusyFor = std::chrono::seconds(30);
constexpr auto kReopenAfter = std::chrono::milliseconds(1500);  // see reopenUnansweredConnections
// Ranks on other agents often fail a moment after the real culprit (a peer vanished from their
// collective): the leader waits this long for the first cause before journaling one.
constexpr auto kSettle = std::chrono::milliseconds(300);
// A finished gang still answers its peers and repeats the outcome to those that have not
// answered it, this long at most. The leader goes once every peer has answered the outcome, a
// member a moment after it heard it: a per-job agent under Slurm then exits within a second of
// its job's end instead of holding the allocation for kLinger.
constexpr auto kLinger = std::chrono::seconds(10);
constexpr auto kMemberLinger = std::chrono::milliseconds(200);  // its answer leaves first
// A side that ended its attempt without a majority may have been the smaller side of a split:
// it goes on telling the lost agents its outcome this long, so that at the heal the other side,
// which may have gone on, tells it that it was left out (see Gang::minority_outcome).
constexpr auto kMinorityLinger = std::chrono::minutes(10);
constexpr auto kQuickReport = std::chrono::milliseconds(50);  // see reportSoon
constexpr int kFullReportEvery = 10;  // beats between two full reports (see reportBelow)

// The attempt's member of that name; nullptr when it is not one.
const proto::GangMember* memberNamed(const std::vector<proto::GangMember>& members,
                                     const std::string& agent) {
  for (const auto& member : members) {
    if (member.agent() == agent) return &member;
  }
  return nullptr;
}

double rejoinTimeout(const proto::RestartPolicy& policy) {
  return policy.has_rejoin_timeout_seconds() ? std::max(0.0, policy.rejoin_timeout_seconds()) : 60;
}

std::string formatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

double slowestOf(const google::protobuf::RepeatedPtrField<proto::RankProgress>& ranks) {
  double slowest = 0;
  for (const auto& rank : ranks) slowest = std::max(slowest, rank.slowest_step_seconds());
  return slowest;
}

// A failure of a whole agent's share (no rank, no step).
proto::JobFailure agentFailure(const std::string& kind, const std::string& agent,
                               const std::string& cause) {
  proto::JobFailure failure;
  failure.set_kind(kind);
  failure.set_rank(-1);
  failure.set_agent(agent);
  failure.set_step(-1);
  failure.set_cause(cause);
  return failure;
}

// The cause an agent gives when it shuts down on a signal, and again when it is back (the
// same words: a peer that heard it first counts it once).
proto::JobFailure shutDownFailure(const std::string& agent, uint32_t attempt) {
  return agentFailure("agent_stopped", agent,
                      "agent " + agent + " shut down while attempt " + std::to_string(attempt) +
                          " ran: its ranks were stopped");
}

std::string describeState(proto::RankState state) {
  switch (state) {
    case proto::SUCCEEDED:
      return "succeeded";
    case proto::STOPPED:
      return "stopped";
    default:
      return "failed";
  }
}

bool sameAgents(const proto::GangRestart& a, const proto::GangRestart& b) {
  return std::equal(a.members().begin(), a.members().end(), b.members().begin(), b.members().end(),
                    [](const proto::GangMember& x, const proto::GangMember& y) {
                      return x.agent() == y.agent() && x.ranks() == y.ranks();
                    });
}

}  // namespace

GangCoordinator::GangCoordinator(Parts parts) : parts_(std::move(parts)) {}

GangCoordinator::~GangCoordinator() {
  for (auto& [job_id, gang] : gangs_) parts_.world->revokeKey(gang.launch.rendezvous_public_key());
  for (auto& [job_id, expected] : expected_) parts_.world->revokeKey(expected.key);
  for (const Ended& ended : ended_) {
    if (!ended.key.empty()) parts_.world->revokeKey(ended.key);
  }
}

bool GangCoordinator::manages(const std::string& job_id) const {
  auto it = gangs_.find(job_id);
  return it != gangs_.end() && !it->second.left;
}

bool GangCoordinator::leads(const Gang& gang) const {
  for (const auto& member : gang.members) {
    if (member.agent() == parts_.agent_name) return true;
    auto peer = gang.peers.find(member.agent());
    if (peer != gang.peers.end() && !peer->second.lost) return false;
  }
  return true;
}

bool GangCoordinator::overEverywhere(const Gang& gang) const {
  if (!gang.over_here) return false;
  return std::all_of(gang.peers.begin(), gang.peers.end(), [&](const auto& entry) {
    const Peer& peer = entry.second;
    // A peer in another attempt runs no rank of this one: it went on to a newer attempt (which
    // it started only with its old ranks over), or it is back from a restart in an older one,
    // over there (it never took this one up).
    const bool elsewhere =
        peer.attempt > attemptOf(gang) ||
        (peer.attempt > 0 && peer.attempt < attemptOf(gang) && peer.attempt_over);
    return peer.lost || elsewhere || (peer.attempt == attemptOf(gang) && peer.attempt_over);
  });
}

void GangCoordinator::expect(const proto::JobLaunch& launch) {
  if (!security::isValidKey(launch.rendezvous_public_key())) return;  // no job key: no gang
  parts_.world->admitKey(launch.rendezvous_public_key(), launch.job_id());
  Expected& expected = expected_[launch.job_id()];
  if (expected.key != launch.rendezvous_public_key()) expected.connections.clear();
  expected.key = launch.rendezvous_public_key();
}

void GangCoordinator::connectEarly(const proto::JobLaunch& launch) {
  auto it = expected_.find(launch.job_id());
  if (it == expected_.end() || it->second.key != launch.rendezvous_public_key()) return;
  // The agents join() talks to while none is lost: in a star every other one from a hub (the
  // first two members), the hubs only from the others (see talksTo); in a tree its parent and
  // children.
  const auto& members = launch.gang();
  std::optional<size_t> self;
  for (int i = 0; i < members.size(); ++i) {
    if (members[i].agent() == parts_.agent_name) self = i;
  }
  if (!self) return;
  const size_t fanout = gangFanout();
  std::set<size_t> contacts;
  if (gangIsTree(members.size(), fanout)) {
    TreePlace place = treePlace(*self, std::vector<bool>(members.size(), false), fanout);
    contacts.insert(place.children.begin(), place.children.end());
    if (place.parent) contacts.insert(*place.parent);
  } else {
    for (size_t i = 0; i < static_cast<size_t>(members.size()); ++i) {
      if (*self < 2 || i < 2) contacts.insert(i);
    }
  }
  for (size_t i : contacts) {
    const proto::GangMember& member = members[static_cast<int>(i)];
    if (i == *self) continue;
    if (it->second.connections.count(member.agent())) continue;
    if (auto connection = parts_.world->connect(launch, member)) {
      it->second.connections[member.agent()] = std::move(connection);
    }
  }
}

GangCoordinator::Gang& GangCoordinator::addGang(const proto::JobLaunch& launch) {
  pass_due_ = true;
  gangs_.erase(launch.job_id());
  Gang& gang = gangs_[launch.job_id()];
  gang.launch = launch;
  gang.first_attempt = launch.attempt();
  gang.members.assign(launch.gang().begin(), launch.gang().end());
  if (gang.members.empty()) {  // a client that sends no gang: this agent alone
    proto::GangMember self;
    self.set_agent(parts_.agent_name);
    self.set_ranks(launch.ranks_size());
    gang.members.push_back(self);
  }
  gang.original_agents = static_cast<int>(gang.members.size());
  parts_.world->admitKey(launch.rendezvous_public_key(), launch.job_id());
  return gang;
}

void GangCoordinator::join(const proto::JobLaunch& launch) {
  if (!security::isValidKey(launch.rendezvous_public_key())) return;  // no job key: no gang
  Gang& gang = addGang(launch);
  // Connections opened by connectEarly() for this key: connectPeers() keeps them.
  if (auto early = expected_.find(launch.job_id()); early != expected_.end()) {
    if (early->second.key == launch.rendezvous_public_key()) {
      for (auto& [agent, connection] : early->second.connections) {
        gang.peers[agent].connection = std::move(connection);
      }
    }
    expected_.erase(early);
  }
  connectPeers(gang);
  save(gang);
}

void GangCoordinator::resume(const std::vector<SavedGang>& saved, const EarlierRun& earlier) {
  for (const auto& ended : earlier.outcomes)
    rememberEnded(ended.job_id, ended.attempt, ended.state);
  for (const SavedGang& kept : saved) {
    const std::string& job_id = kept.launch.job_id();
    const uint32_t attempt = kept.launch.attempt();
    const auto* outcome = earlier.outcomeOf(job_id);
    if ((outcome && outcome->attempt >= attempt) ||
        !security::isValidKey(kept.launch.rendezvous_public_key())) {
      forget(job_id);
      continue;
    }
    Gang& gang = addGang(kept.launch);
    gang.resumed = true;
    gang.first_attempt = kept.first_attempt;
    gang.original_agents = kept.original_agents;
    gang.uncounted_restarts = kept.uncounted_restarts;
    gang.stopping = kept.stopping;
    // An attempt with no record of its end here was never started (the agent died in between):
    // failed, like one whose ranks it left running.
    const auto ended = earlier.ended_here.find({job_id, attempt});
    gang.over_here = true;
    gang.state_here = ended == earlier.ended_here.end() ? proto::FAILED : ended->second;
    std::string how = describeState(gang.state_here) + " here";
    if (!gang.stopping && gang.state_here != proto::SUCCEEDED) {
      if (kept.stopped_cleanly) {
        gang.failures.push_back(shutDownFailure(parts_.agent_name, attempt));
      } else {
        gang.failures.push_back(agentFailure(
            "agent_restart", parts_.agent_name,
            "agent " + parts_.agent_name + " restarted while attempt " + std::to_string(attempt) +
                " ran (its process ended without shutting down: killed, crashed, or its host "
                "went down)"));
      }
      how = gang.failures.back().cause();
    }
    connectPeers(gang);
    save(gang);  // stopped_cleanly is spent: a second restart is a new one
    parts_.log("job " + job_id + " attempt " + std::to_string(attempt) +
               ": taken up again after the agent restarted (" + how + ")");
  }
}

void GangCoordinator::shutDown() {
  for (auto& [job_id, gang] : gangs_) {
    if (gang.left || gang.outcome) continue;
    save(gang, /*stopped_cleanly=*/true);
    if (!gang.stopping) onFailure(gang, shutDownFailure(parts_.agent_name, attemptOf(gang)), true);
  }
}

void GangCoordinator::save(const Gang& gang, bool stopped_cleanly) {
  SavedGang saved;
  saved.launch = gang.launch;
  saved.first_attempt = gang.first_attempt;
  saved.original_agents = gang.original_agents;
  saved.uncounted_restarts = gang.uncounted_restarts;
  saved.stopping = gang.stopping;
  saved.stopped_cleanly = stopped_cleanly;
  parts_.world->saveGang(saved);
}

void GangCoordinator::forget(const std::string& job_id) { parts_.world->forgetGang(job_id); }

void GangCoordinator::connectPeers(Gang& gang) {
  const auto now = timeNow();
  std::map<std::string, Peer> peers;
  for (const auto& member : gang.members) {
    if (member.agent() == parts_.agent_name) continue;
    Peer peer;
    if (auto kept = gang.peers.find(member.agent());
        kept != gang.peers.end() && kept->second.connection) {
      peer.connection = std::move(kept->second.connection);
      peer.unanswered_since = kept->second.unanswered_since;
    }
    peer.last_heard = now;
    peers[member.agent()] = std::move(peer);
  }
  gang.peers = std::move(peers);
  gang.reported.clear();  // the parent's view starts afresh too: the first report is full
  gang.tree = gangIsTree(gang.members.size(), gangFanout());
  watchContacts(gang, now);
  gang.next_heartbeat = now;
}

void GangCoordinator::placeInTree(Gang& gang) {
  std::vector<bool> lost(gang.members.size(), false);
  size_t self = 0;
  for (size_t i = 0; i < gang.members.size(); ++i) {
    auto peer = gang.peers.find(gang.members[i].agent());
    if (peer == gang.peers.end()) {
      self = i;
    } else {
      lost[i] = peer->second.lost;
    }
  }
  gang.hubs = {};  // a star's
  const TreePlace place = treePlace(self, lost, gangFanout());
  gang.parent = place.parent ? gang.members[*place.parent].agent() : "";
  gang.contacts.clear();
  if (!gang.parent.empty()) gang.contacts.insert(gang.parent);
  for (size_t child : place.children) gang.contacts.insert(gang.members[child].agent());
  gang.below.clear();
  for (size_t i : place.below) gang.below.push_back(gang.members[i].agent());
}

void GangCoordinator::findHubs(Gang& gang) {
  gang.hubs = {};
  size_t found = 0;
  for (const auto& member : gang.members) {
    if (found == gang.hubs.size()) break;
    auto peer = gang.peers.find(member.agent());
    const bool here = member.agent() == parts_.agent_name;
    if (here || (peer != gang.peers.end() && !peer->second.lost)) {
      gang.hubs[found++] = member.agent();
    }
  }
}

void GangCoordinator::watchContacts(Gang& gang, Clock::time_point now) {
  if (gang.tree) {
    placeInTree(gang);
  } else {
    findHubs(gang);
  }
  for (const auto& member : gang.members) {
    auto it = gang.peers.find(member.agent());
    if (it == gang.peers.end()) continue;
    Peer& peer = it->second;
    const bool talks = talksTo(gang, member.agent());
    if (talks && !peer.watched) peer.last_heard = now;
    if (talks && !peer.connection && !lostForGood(gang, peer)) openConnection(gang, peer, member);
    if (!talks) peer.connection.reset();
    peer.watched = talks;
  }
}

void GangCoordinator::openConnection(const Gang& gang, Peer& peer,
                                     const proto::GangMember& member) {
  peer.connection = parts_.world->connect(gang.launch, member);
  peer.unanswered_since.reset();
  // A new connection counts afresh; a proposal sent on the old one is sent again (sendHeartbeats).
  peer.sent = peer.replies = peer.last_request = peer.outcome_request = peer.proposal_request = 0;
}

// A peer that had not admitted the job's key yet (it joins a moment after this agent) refuses
// the first handshake, and libzmq never retries a refused handshake: the heartbeats sent there
// would be lost for good while the peer's own still arrive. A connection whose monitor reports
// the refusal is opened again at once, one that has left a message unanswered for a while too.
// Runs at every pass: it walks the peers in place (a lookup by name for each of 255 members made
// it a twelfth of a 256-agent leader's time) and looks a member up only to reopen.
void GangCoordinator::reopenUnansweredConnections(Gang& gang, Clock::time_point now) {
  for (auto& [agent, peer] : gang.peers) {
    if (!peer.watched || lostForGood(gang, peer)) continue;
    // Only a connection that never answered can be waiting on a refused handshake: the hub's
    // tick does not read the monitors of the others.
    if (peer.connection) {
      const bool refused = peer.replies == 0 && peer.connection->handshakeRefused();
      // One that is up or in its handshake is only slow: opened again, a handshake that took
      // over kReopenAfter on a loaded host (256 agents on 2 cores) never finished.
      const bool unanswered = peer.unanswered_since &&
                              now - *peer.unanswered_since >= kReopenAfter &&
                              !peer.connection->alive();
      if (!refused && !unanswered) continue;
    }
    if (const proto::GangMember* member = memberNamed(gang.members, agent)) {
      openConnection(gang, peer, *member);
    }
  }
}

bool GangCoordinator::send(Gang& gang, const std::string& agent, proto::GangMessage message) {
  auto peer = gang.peers.find(agent);
  if (peer == gang.peers.end() || !peer->second.connection) return false;
  message.set_job_id(gang.launch.job_id());
  message.set_from_agent(parts_.agent_name);
  if (message.attempt() == 0) message.set_attempt(attemptOf(gang));
  proto::Envelope envelope;
  *envelope.mutable_gang() = std::move(message);
  // Never blocks: a peer that is not connected misses this one; the next heartbeat, soon (see
  // scheduleHeartbeat), repeats it.
  Peer& to = peer->second;
  const bool sent = to.connection->send(envelope);
  if (!sent) {
    gang.unsent = true;
    to.missed = true;
  } else {
    to.missed = false;
    ++to.sent;
    to.last_request = envelope.request_id();  // stamped by the connection
    if (envelope.gang().has_outcome() && to.outcome_request == 0)
      to.outcome_request = to.last_request;
  }
  if (!to.unanswered_since) to.unanswered_since = timeNow();
  return sent;
}

// Without the quick resend, a rank exit or an outcome sent while the connection's handshake was
// still going waited for the next interval: half a second on every short multi-agent job.
void GangCoordinator::scheduleHeartbeat(Gang& gang, Clock::time_point now) {
  if (gang.unsent) {
    gang.resend_after =
        std::clamp<Clock::duration>(2 * gang.resend_after, kFirstResend, kHeartbeatEvery);
  } else {
    gang.resend_after = Clock::duration::zero();
  }
  gang.unsent = false;
  const auto interval = gang.tree ? kTreeHeartbeatEvery : kHeartbeatEvery;
  gang.next_heartbeat =
      now + (gang.resend_after > Clock::duration::zero() ? gang.resend_after : interval);
}

void GangCoordinator::sendHeartbeats(Gang& gang) {
  if (!gang.over_here) gang.progress_here = parts_.world->progress(gang.launch.job_id());
  proto::GangMessage message;
  proto::GangHeartbeat* beat = message.mutable_heartbeat();
  beat->set_attempt_over(gang.over_here);
  beat->set_state(gang.state_here);
  for (const auto& rank : gang.progress_here) *beat->add_ranks() = rank;
  if (!gang.failures.empty()) *beat->mutable_failure() = gang.failures[rootCause(gang.failures)];
  beat->set_stopping(gang.stopping);
  beat->set_started(gang.started);
  proto::GangMessage up;  // to a tree's parent: the same and what this agent knows of those below
  std::vector<std::pair<std::string, std::string>> sent_reports;
  if (gang.tree && !gang.parent.empty()) {
    up = message;
    reportBelow(gang, *up.mutable_heartbeat(), &sent_reports);
  }
  // An agent outside the hubs needs no beat from them while nothing happens: the answers to its
  // own beats tell it they are there. A hub's beat goes to it until the connection has carried
  // an answer (proof that its handshake went through, see reopenUnansweredConnections), then
  // only with news (a failure or a stop),
  // repeated until the attempt ends: the leader of 128 agents answers 127 beats a tick instead of
  // also sending 127.
  const bool news = !gang.failures.empty() || gang.stopping;
  for (auto& [agent, peer] : gang.peers) {
    if (!peer.watched || lostForGood(gang, peer)) continue;
    if (peer.lost) {  // it may come back: it hears how things stand
      send(gang, agent, message);
      continue;
    }
    // A proposal the peer has not acknowledged yet is sent again (a new connection, a message
    // that found the connection in its handshake).
    if (gang.proposed_at && !peer.adopted && memberNamed(gang.members, agent) &&
        std::any_of(gang.next.members().begin(), gang.next.members().end(),
                    [&name = agent](const proto::GangMember& m) { return m.agent() == name; })) {
      propose(gang, agent);
      continue;
    }
    // A peer that missed the restart gets it again instead, and once the attempt started here,
    // the beat that says so right behind it: from those that pass it on, and from any agent
    // that hears it speak of an older attempt (back from a restart while this one was taken up).
    const bool behind = peer.attempt > 0 && peer.attempt < attemptOf(gang);
    if ((passesOnTo(gang, agent) || behind) && peer.attempt < attemptOf(gang) &&
        attemptOf(gang) > gang.first_attempt && gang.next.members_size() > 0 && !gang.proposed_at) {
      proto::GangMessage restart;
      *restart.mutable_restart() = gang.next;
      send(gang, agent, std::move(restart));
      if (!gang.started) continue;
    }
    // The word that the attempt started goes to those that wait for it, until they say so.
    const bool waits_for_start =
        gang.started && !peer.started && !peer.attempt_over && passesOnTo(gang, agent);
    if (!news && !waits_for_start && !reportsTo(gang, agent) && peer.replies > 0) continue;
    if (agent != gang.parent || !gang.tree) {
      send(gang, agent, message);
    } else if (send(gang, agent, up)) {
      for (auto& [below, report] : sent_reports) gang.reported[below] = std::move(report);
      ++gang.beats_since_full_report;
    }
  }
  gang.last_beat = timeNow();
  scheduleHeartbeat(gang, gang.last_beat);
}

void GangCoordinator::reportSoon(Gang& gang) {
  if (!gang.tree || gang.parent.empty()) return;
  gang.next_heartbeat = std::min(gang.next_heartbeat, gang.last_beat + kQuickReport);
}

// A parent keeps what it was told of an agent until told otherwise (applyReports), so an
// unchanged report need not be sent again: the leader of 256 agents decoded 127 reports from each
// child every second, and every 50 ms while the attempt's ranks started or ended.
void GangCoordinator::reportBelow(
    Gang& gang, proto::GangHeartbeat& beat,
    std::vector<std::pair<std::string, std::string>>* sent_reports) const {
  if (gang.reported_to != gang.parent || gang.beats_since_full_report >= kFullReportEvery) {
    gang.reported.clear();
    gang.reported_to = gang.parent;
    gang.beats_since_full_report = 0;
  }
  const double stalled_after = stallReportSeconds(gang.launch.restart());
  proto::GangReport report;
  std::string bytes;
  for (const std::string& agent : gang.below) {
    auto it = gang.peers.find(agent);
    if (it == gang.peers.end() || (it->second.attempt == 0 && !it->second.lost)) continue;
    const Peer& peer = it->second;
    report.Clear();
    report.set_agent(agent);
    report.set_attempt(peer.attempt);
    report.set_attempt_over(peer.attempt_over);
    report.set_state(peer.state);
    report.set_slowest_step_seconds(peer.slowest_step);
    report.set_lost(peer.lost);
    report.set_down(peer.down);
    for (const auto& rank : peer.progress) {
      if (rank.step() >= 0 && rank.idle_seconds() >= stalled_after) {
        *report.add_stalled_ranks() = rank;
      }
    }
    report.SerializeToString(&bytes);
    auto last = gang.reported.find(agent);
    if (last != gang.reported.end() && last->second == bytes) continue;
    *beat.add_below() = report;
    sent_reports->emplace_back(agent, bytes);
  }
}

// What this agent hears of an agent itself (a child) comes before what is reported of it.
void GangCoordinator::applyReports(Gang& gang, const proto::GangHeartbeat& beat) {
  const auto now = timeNow();
  bool changed = false;  // more than progress: the pass looks, and the parent hears soon
  bool lost_changed = false;
  for (const proto::GangReport& report : beat.below()) {
    auto it = gang.peers.find(report.agent());
    if (it == gang.peers.end() || it->second.watched) continue;
    Peer& peer = it->second;
    if (report.attempt() > peer.attempt) {
      peer.attempt_over = false;
      changed = true;
    }
    peer.attempt = std::max(peer.attempt, report.attempt());
    if (report.attempt() == attemptOf(gang) && !gang.outcome) {
      changed =
          changed || peer.attempt_over != report.attempt_over() || peer.state != report.state();
      peer.attempt_over = report.attempt_over();
      peer.state = report.state();
      peer.progress.assign(report.stalled_ranks().begin(), report.stalled_ranks().end());
      peer.slowest_step = report.slowest_step_seconds();
    }
    if (report.lost()) peer.down = peer.down || report.down();
    if (report.lost() && !peer.lost) {
      peer.lost = true;  // its failure came by the flood: the agent that watches it sent it
      peer.lost_at = now;
      lost_changed = true;
    } else if (!report.lost() && lossCanBeUndone(gang, peer)) {
      peer.lost = peer.down = false;
      parts_.log("job " + gang.launch.job_id() + ": agent " + report.agent() +
                 " answers again below; it is a member again");
      lost_changed = true;
    }
  }
  if (lost_changed) watchContacts(gang, now);
  if (changed || lost_changed) {
    pass_due_ = true;
    reportSoon(gang);
  }
}

proto::Envelope GangCoordinator::handle(const proto::Envelope& request) {
  const proto::GangMessage& message = request.gang();
  auto refuse = [&](ErrorCode code, const std::string& why) {
    return protocol::makeError(request.request_id(), code, why, parts_.agent_name);
  };
  auto it = gangs_.find(message.job_id());
  if (it == gangs_.end() || it->second.left) {
    // kCancelled: the sender, cut off while this side decided, leaves the job (onReadable).
    const Ended* ended = endedHere(message.job_id());
    if (ended && message.attempt() <= ended->attempt) {
      return refuse(ErrorCode::kCancelled, "job '" + message.job_id() + "' is over on agent '" +
                                               parts_.agent_name +
                                               "': " + describeState(ended->state) +
                                               " after attempt " + std::to_string(ended->attempt));
    }
    return refuse(ErrorCode::kNotFound, "agent '" + parts_.agent_name + "' has no gang for job '" +
                                            message.job_id() + "'");
  }
  Gang& gang = it->second;
  auto peer = gang.peers.find(message.from_agent());
  // kCancelled tells the sender it is out of the job (see onReadable).
  if (peer == gang.peers.end()) {
    return refuse(ErrorCode::kCancelled, "agent '" + message.from_agent() + "' is not in attempt " +
                                             std::to_string(attemptOf(gang)) + " of job '" +
                                             message.job_id() + "'");
  }
  if (lostForGood(gang, peer->second)) {
    return refuse(ErrorCode::kCancelled, "agent '" + message.from_agent() +
                                             "' was declared lost by '" + parts_.agent_name +
                                             "' in attempt " + std::to_string(attemptOf(gang)));
  }
  // An attempt is taken up from one proposer only: another proposal of it, or of an older one,
  // is refused, and its proposer leaves (see Gang::proposed_at).
  if (message.has_restart() && message.attempt() <= attemptOf(gang) &&
      (message.attempt() < attemptOf(gang) || attemptOf(gang) == gang.first_attempt ||
       !sameAgents(message.restart(), gang.next))) {
    return refuse(ErrorCode::kCancelled,
                  "agent '" + parts_.agent_name + "' is in attempt " +
                      std::to_string(attemptOf(gang)) + " of job '" + message.job_id() +
                      "' already: it takes up no other attempt " +
                      std::to_string(message.attempt()) + " (from '" + message.from_agent() + "')");
  }
  // A stopped job takes up no attempt: a proposal sent before the stop may arrive after it.
  if (message.has_restart() && gang.stopping && message.attempt() > attemptOf(gang)) {
    return refuse(ErrorCode::kCancelled, "job '" + message.job_id() + "' is being stopped on '" +
                                             parts_.agent_name + "': it takes up no attempt " +
                                             std::to_string(message.attempt()));
  }
  Peer& from = peer->second;
  from.last_heard = timeNow();
  from.answered = true;
  if (gang.proposed_at && message.attempt() == attemptOf(gang) + 1 && message.has_heartbeat()) {
    noteAdoptions(gang, from, message.heartbeat());
  }
  // Only progress is news to nobody: the hang check looks at it on the next pass.
  // A failure or a stop heard before is no news either: repeated in every beat until the attempt
  // is decided, taken for news it had each agent of a tree beat again within kQuickReport, and
  // its parent and children answer in kind, 20 times a second while the decision waited.
  const proto::GangHeartbeat& heard = message.heartbeat();
  const bool only_progress = message.has_heartbeat() && !from.lost &&
                             message.attempt() == from.attempt &&
                             heard.attempt_over() == from.attempt_over &&
                             heard.state() == from.state && heard.started() == from.started &&
                             (!heard.has_failure() || knowsFailure(gang, heard.failure())) &&
                             (!heard.stopping() || gang.stopping);
  if (!only_progress) {
    pass_due_ = true;
    reportSoon(gang);
  }
  if (from.lost) {
    from.lost = from.down = false;  // it is back: its port answers (an agent that restarted)
    const auto away =
        std::chrono::duration_cast<std::chrono::seconds>(from.last_heard - from.lost_at);
    parts_.log("job " + gang.launch.job_id() + ": agent " + message.from_agent() +
               " answers again " + std::to_string(away.count()) +
               " s after it was lost; it is a member again");
    watchContacts(gang, from.last_heard);
  }
  // A hub passes a failure or a stop on at once: the other agents hear it from the hubs only.
  // In a tree every agent does, to its parent and children.
  const bool relay = gang.tree || isHub(gang, parts_.agent_name);
  if (message.attempt() > from.attempt) from.attempt_over = false;
  from.attempt = std::max(from.attempt, message.attempt());
  if (message.has_heartbeat() && message.attempt() == from.attempt &&
      message.attempt() != attemptOf(gang)) {
    noteOtherAttempt(gang, from, message.heartbeat());
  }
  if (message.has_heartbeat() && message.attempt() == attemptOf(gang) && !gang.outcome) {
    const proto::GangHeartbeat& beat = message.heartbeat();
    from.attempt_over = beat.attempt_over();
    from.state = beat.state();
    from.progress.assign(beat.ranks().begin(), beat.ranks().end());
    from.slowest_step = slowestOf(beat.ranks());
    from.started = beat.started();
    if (gang.tree) applyReports(gang, beat);
    if (beat.has_failure()) onFailure(gang, beat.failure(), relay);
    if (beat.stopping() && !gang.stopping) {
      gang.stopping = true;
      save(gang);
      stopRanksHere(gang);
      if (relay) sendHeartbeats(gang);
    }
    // The word is taken from the attempt's first agent, which proposed it, or in a tree from
    // the parent that passes it down: a rival proposal of the same attempt number (a leader on
    // the other side of a cut that thought it led too) names other agents, and one of its
    // agents that beats here speaks of its own copy.
    const bool passes_it_down = message.from_agent() == gang.members.front().agent() ||
                                (gang.tree && message.from_agent() == gang.parent);
    if (beat.started() && passes_it_down && !gang.started && !gang.over_here && !gang.stopping) {
      startRanksHere(gang);
    }
  } else if (message.has_restart() && gang.proposed_at &&
             message.attempt() == attemptOf(gang) + 1 && sameAgents(message.restart(), gang.next)) {
    from.adopted = true;  // this agent's own proposal, passed back by one that took it up
    pass_due_ = true;
  } else if (message.has_restart() && message.attempt() > attemptOf(gang) && !gang.outcome) {
    startAttempt(gang, message.attempt(), message.restart(), /*start_ranks=*/false);
  } else if (message.has_outcome() && !gang.outcome) {
    gang.outcome = message.outcome();
    forget(gang.launch.job_id());
    // This answer tells the sender it knows; in a tree, the outcome goes on to the children at
    // once, and this agent lingers until they know too (passOverGangs).
    const bool children = gang.tree && gang.contacts.size() > (gang.parent.empty() ? 0 : 1);
    gang.drop_at = timeNow() + (children ? kLinger : kMemberLinger);
    gang.minority_outcome = !quorumHere(gang).majority;
    if (gang.minority_outcome) gang.drop_at = timeNow() + kMinorityLinger;
    gang.next_heartbeat = timeNow();
    stopRanksHere(gang);
  }
  proto::Envelope reply;
  reply.set_request_id(request.request_id());
  reply.mutable_ack();
  return reply;
}

std::vector<zmq_pollitem_t> GangCoordinator::pollItems() const {
  std::vector<zmq_pollitem_t> out;
  for (const auto& [job_id, gang] : gangs_) {
    for (const auto& [agent, peer] : gang.peers) {
      if (!peer.awaitsReply() || gang.left || !peer.connection->socket()) continue;
      const short events = ZMQ_POLLIN | (peer.missed ? ZMQ_POLLOUT : 0);
      out.push_back({peer.connection->socket(), 0, events, 0});
    }
  }
  return out;
}

void GangCoordinator::onWritable(const std::vector<void*>& sockets) {
  const auto now = timeNow();
  for (auto& [job_id, gang] : gangs_) {
    for (auto& [agent, peer] : gang.peers) {
      if (!peer.missed || !peer.connection ||
          std::find(sockets.begin(), sockets.end(), peer.connection->socket()) == sockets.end()) {
        continue;
      }
      peer.missed = false;  // polled for POLLOUT again only after another missed message
      gang.next_heartbeat = std::min(gang.next_heartbeat, now);
      pass_due_ = true;
    }
  }
}

void GangCoordinator::onReadable() {
  std::vector<std::pair<std::string, std::string>> left;  // job, why
  for (auto& [job_id, gang] : gangs_) {
    for (auto& [agent, peer] : gang.peers) {
      // markLost() below may close this very connection (watchContacts): test it each time.
      while (peer.awaitsReply() && !gang.left) {
        const std::optional<std::string> bytes = peer.connection->receive();
        if (!bytes) break;
        peer.unanswered_since.reset();
        ++peer.replies;
        auto reply = protocol::decode(bytes->data(), bytes->size());
        if (gang.proposed_at && reply.isOk() && reply->request_id() == peer.proposal_request &&
            peer.proposal_request != 0 && !reply->has_error()) {
          peer.adopted = true;
          pass_due_ = true;
        }
        if (gang.outcome) {
          if (gang.minority_outcome && reply.isOk() && reply->has_error() &&
              reply->error().code() == proto::CANCELLED) {
            left.emplace_back(job_id, reply->error().message());  // the other side went on
          } else if (reply.isOk() && peer.outcome_request != 0 &&
                     reply->request_id() >= peer.outcome_request) {
            pass_due_ = pass_due_ || !peer.knows_outcome;  // the leader may go now
            peer.knows_outcome = true;
          }
          continue;
        }
        if (!reply.isOk() || !reply->has_error()) {
          // A lost peer is a member again by its own messages (handle). So is one that reports
          // to this agent (its children, a hub's members): an answer shows its process is up,
          // not that it reports here. Cut off from its parent alone, a tree's agent goes on
          // reporting to that parent, and to the ancestor that took it over it only answered:
          // counted as heard, it was never lost, never over, and the decision waited forever.
          if (!peer.lost && reportsTo(gang, agent)) peer.last_heard = timeNow();
          if (!peer.lost) peer.answered = true;
          continue;
        }
        const proto::Error& error = reply->error();
        pass_due_ = true;
        if (error.code() == proto::CANCELLED) {
          // Lost or left out in its view: it went on without this agent (split brain avoided).
          left.emplace_back(job_id, error.message());
        } else if (error.code() == proto::NOT_FOUND && peer.answered) {
          // It knew the job and has forgotten it (it restarted): its ranks are gone. Before its
          // first answer it may only not have joined yet; silence decides then.
          markLost(gang, agent, error.message(), /*down=*/true, /*forgot=*/true);
        }
      }
    }
  }
  for (const auto& [job_id, why] : left) leave(job_id, why);
}

void GangCoordinator::onSupervisorEvents(const std::vector<AttemptEvent>& events) {
  for (const AttemptEvent& event : events) {
    auto it = gangs_.find(event.job_id);
    if (it == gangs_.end() || event.attempt != attemptOf(it->second)) continue;
    Gang& gang = it->second;
    pass_due_ = true;
    if (event.failure) onFailure(gang, *event.failure, true);
    if (event.over) {
      gang.over_here = true;
      gang.state_here = *event.over;
      gang.progress_here.clear();
      sendHeartbeats(gang);  // the leader may be waiting for this
    }
  }
}

bool GangCoordinator::stopRequested(const std::string& job_id) {
  auto it = gangs_.find(job_id);
  if (it == gangs_.end()) return false;
  pass_due_ = true;
  it->second.stopping = true;
  save(it->second);
  stopRanksHere(it->second);
  sendHeartbeats(it->second);
  return true;
}

Status GangCoordinator::restartRequested(const proto::RestartJob& request) {
  auto it = gangs_.find(request.job_id());
  if (it == gangs_.end() || it->second.left || it->second.outcome) {
    return notFound("job '" + request.job_id() + "' is not running on agent '" + parts_.agent_name +
                    "'");
  }
  Gang& gang = it->second;
  // Its ranks are over here, and the leader may already have decided the outcome without this
  // agent having heard yet: the leader, which the client asks too, answers for the job.
  if (gang.over_here && !leads(gang)) {
    return notFound("attempt " + std::to_string(attemptOf(gang)) + " of job '" + request.job_id() +
                    "' is over on agent '" + parts_.agent_name + "'");
  }
  const bool known =
      request.exclude_agent().empty() || memberNamed(gang.members, request.exclude_agent());
  if (!known) {
    return invalidArgument("agent '" + request.exclude_agent() + "' does not run job '" +
                           request.job_id() + "'");
  }
  if (gang.members.size() == 1 && !request.exclude_agent().empty()) {
    return invalidArgument("job '" + request.job_id() + "' runs on agent '" +
                           request.exclude_agent() + "' alone: nothing would be left to run it");
  }
  std::string cause = "restart requested by a client";
  if (!request.reason().empty()) cause += " (" + request.reason() + ")";
  if (!request.exclude_agent().empty()) cause += ", without agent " + request.exclude_agent();
  const proto::JobFailure failure = agentFailure("client_restart", request.exclude_agent(), cause);
  // It outranks whatever failure this attempt already had (rootCause): it decides the layout.
  pass_due_ = true;
  const bool first = gang.failures.empty();
  onFailure(gang, failure, true);
  if (!first) sendHeartbeats(gang);
  return Status::ok();
}

// How far a peer in another attempt got, and those below it, for overEverywhere: an agent back
// from a restart in an older attempt, whose peers went on to a proposal it never took up, waited
// for them forever otherwise (and they for it).
void GangCoordinator::noteOtherAttempt(Gang& gang, Peer& from, const proto::GangHeartbeat& beat) {
  from.attempt_over = beat.attempt_over();
  for (const proto::GangReport& report : beat.below()) {
    auto it = gang.peers.find(report.agent());
    if (it == gang.peers.end() || it->second.watched) continue;  // heard from itself
    Peer& below = it->second;
    if (report.attempt() > below.attempt) below.attempt_over = false;
    below.attempt = std::max(below.attempt, report.attempt());
    if (report.attempt() == below.attempt && below.attempt != attemptOf(gang)) {
      below.attempt_over = report.attempt_over();
    }
  }
  pass_due_ = true;
}

bool GangCoordinator::knowsFailure(const Gang& gang, const proto::JobFailure& failure) const {
  return std::any_of(
      gang.failures.begin(), gang.failures.end(),
      [&](const proto::JobFailure& known) { return known.cause() == failure.cause(); });
}

void GangCoordinator::onFailure(Gang& gang, const proto::JobFailure& failure, bool tell_peers) {
  if (knowsFailure(gang, failure)) return;
  const bool first = gang.failures.empty();
  gang.failures.push_back(failure);
  if (!first) return;
  parts_.log("job " + gang.launch.job_id() + " attempt " + std::to_string(attemptOf(gang)) +
             " failed: " + failure.cause());
  stopRanksHere(gang);
  if (tell_peers) sendHeartbeats(gang);
}

void GangCoordinator::markLost(Gang& gang, const std::string& agent, const std::string& why,
                               bool down, bool forgot) {
  Peer& peer = gang.peers[agent];
  peer.down = peer.down || down;  // known now, also for a peer lost before
  peer.forgot = peer.forgot || forgot;
  if (peer.lost) return;
  peer.lost = true;
  peer.lost_at = timeNow();
  const proto::JobFailure failure =
      agentFailure("agent_lost", agent, "agent " + agent + " lost: " + why);
  parts_.log("job " + gang.launch.job_id() + ": " + failure.cause());
  watchContacts(gang, peer.lost_at);  // a hub lost: the next in line is one now
  onFailure(gang, failure, true);
}

void GangCoordinator::journal(const Gang& gang, proto::JournalRecord& record) {
  record.set_job(gang.launch.job_id());
  record.set_attempt(attemptOf(gang));
  record.set_source("agent:" + parts_.agent_name);
  parts_.world->journal(record);
}

// The root cause is journaled once; a better one found later (an agent lost after its peers'
// ranks had failed) is journaled as well.
void GangCoordinator::journalRootCause(Gang& gang) {
  const size_t root = rootCause(gang.failures);
  if (gang.journaled && *gang.journaled == root) return;
  gang.journaled = root;
  proto::JournalRecord record;
  *record.mutable_job_failure() = gang.failures[root];
  journal(gang, record);
}

void GangCoordinator::checkForHang(Gang& gang) {
  if (!gang.failures.empty() || gang.stopping) return;
  std::vector<std::pair<std::string, proto::RankProgress>> ranks;
  for (const auto& rank : gang.progress_here) ranks.emplace_back(parts_.agent_name, rank);
  for (const auto& [agent, peer] : gang.peers) {
    if (peer.lost || peer.attempt != attemptOf(gang)) continue;
    for (const auto& rank : peer.progress) ranks.emplace_back(agent, rank);
  }
  // Two stages: at half the timeout the culprit is named (and cleared when progress resumes),
  // at the full timeout the job's on_hang action runs.
  // In a tree, the peers below report only their stalled ranks, and their slowest step apart.
  double slowest = 0;
  for (const auto& rank : gang.progress_here) {
    slowest = std::max(slowest, rank.slowest_step_seconds());
  }
  for (const auto& [agent, peer] : gang.peers) {
    if (!peer.lost && peer.attempt == attemptOf(gang))
      slowest = std::max(slowest, peer.slowest_step);
  }
  const double timeout = hangTimeout(gang.launch.restart(), slowest);
  const std::string action = hangAction(gang.launch.restart(), gang.launch.launcher());
  const std::optional<proto::JobFailure> hung = hangVerdict(ranks, timeout);
  if (hung && action != "warn") {
    onFailure(gang, *hung, true);
    return;
  }
  const std::optional<proto::JobFailure> suspect = hung ? hung : hangSuspicion(ranks, timeout);
  const std::string stage = hung ? "hung" : suspect ? "suspected" : "cleared";
  if (stage == gang.hang_stage || (stage == "cleared" && gang.hang_stage.empty())) return;
  gang.hang_stage = stage == "cleared" ? "" : stage;
  proto::JournalRecord record;
  proto::HangSuspicion* hang = record.mutable_hang_suspicion();
  hang->set_stage(stage);
  hang->set_timeout_seconds(timeout);
  hang->set_action(action);
  hang->set_rank(suspect ? suspect->rank() : -1);
  hang->set_agent(suspect ? suspect->agent() : "");
  if (stage == "cleared") {
    hang->set_cause("progress resumed: the suspected hang is over");
  } else if (stage == "hung") {
    hang->set_cause(suspect->cause() + "; on_hang is warn: it is left running");
  } else {
    hang->set_cause(suspect->cause() + "; at " + formatSeconds(timeout) + " s: " + action);
  }
  parts_.log("job " + gang.launch.job_id() + ": " + hang->cause());
  journal(gang, record);
}

GangCoordinator::Plan GangCoordinator::planAfterFailure(const Gang& gang) const {
  Plan plan;
  proto::JobDecision& decision = plan.decision;
  if (gang.failures.empty()) {
    decision.set_next(proto::JobDecision::STOP);
    decision.set_reason("stopped by a client");
    return plan;
  }
  const proto::JobFailure& cause = gang.failures[rootCause(gang.failures)];
  if (gang.stopping) {
    decision.set_next(proto::JobDecision::STOP);
    decision.set_reason("stopped by a client; " + cause.cause());
    return plan;
  }
  if (cause.kind() == "hung" &&
      hangAction(gang.launch.restart(), gang.launch.launcher()) == "fail") {
    decision.set_next(proto::JobDecision::FAIL);
    decision.set_reason(cause.cause() + " (no restart: restart.on_hang is fail)");
    return plan;
  }
  std::set<std::string> lost;
  for (const auto& [agent, peer] : gang.peers) {
    if (peer.lost) lost.insert(agent);
  }
  proto::RestartPolicy policy = gang.launch.restart();
  const uint32_t used = attemptOf(gang) - gang.first_attempt - gang.uncounted_restarts;
  std::string failed_agent = cause.agent();
  plan.by_client = cause.kind() == "client_restart";
  // A clean shutdown of an agent (an upgrade, a reboot by hand) is no fault of the job or of
  // its host: the job goes on where it ran, as a client's restart would.
  plan.uncounted = plan.by_client || cause.kind() == "agent_stopped";
  if (plan.uncounted) {
    policy.set_max_restarts(used + 1);  // not the policy's restart: it always runs
    failed_agent.clear();
  }
  if (plan.by_client) {  // on what the client left
    policy.set_min_nodes(1);
    if (!cause.agent().empty()) lost.insert(cause.agent());
  }
  plan.next = planNextAttempt(gang.members, lost, failed_agent, policy, gang.original_agents, used);
  plan.may_wait = !reasonToWait(gang, plan).empty();
  if (!plan.next.refused.empty()) {
    decision.set_next(proto::JobDecision::FAIL);
    decision.set_reason(cause.cause() + " (no restart: " + plan.next.refused + ")");
    return plan;
  }
  const uint32_t max = gang.launch.restart().max_restarts();
  const uint32_t spent = used + (plan.uncounted ? 0 : 1);
  decision.set_next(proto::JobDecision::RESTART);
  decision.set_restarts_left(max > spent ? max - spent : 0);
  decision.set_reason(cause.cause());
  return plan;
}

void GangCoordinator::journalDecision(Gang& gang) {
  if (gang.failures.empty() && !gang.stopping) return;
  // Carried out already (the restart is decided; a stop while waiting ends in the outcome).
  if (restartDecided(gang) && !gang.stopping) return;
  const Plan plan = planAfterFailure(gang);
  if (plan.may_wait) return;  // decided once they answer or their time is up (decide)
  if (gang.decision && gang.decision->next() == plan.decision.next() &&
      gang.decision->restarts_left() == plan.decision.restarts_left()) {
    return;
  }
  gang.decision = plan.decision;
  proto::JournalRecord record;
  *record.mutable_job_decision() = plan.decision;
  journal(gang, record);
}

void GangCoordinator::decide(Gang& gang, Clock::time_point now) {
  if (restartDecided(gang)) {
    if (gang.stopping) finish(gang, proto::STOPPED, "stopped by a client while restarting");
    return;
  }
  bool stopped = gang.stopping || gang.state_here == proto::STOPPED;
  for (const auto& [agent, peer] : gang.peers) stopped = stopped || peer.state == proto::STOPPED;
  if (gang.failures.empty()) {
    finish(gang, stopped ? proto::STOPPED : proto::SUCCEEDED, "");
    return;
  }
  const Plan plan = planAfterFailure(gang);
  const proto::JobFailure& cause = gang.failures[rootCause(gang.failures)];
  const bool settled =
      plan.decision.next() != proto::JobDecision::RESTART && plan.next.refused.empty();
  if (settled) {  // stopped, or a hang with on_hang: fail
    // A client's stop may reach a side cut off from the others alone: it stops, and says that
    // it decided without a majority (the others may have decided otherwise, or go on).
    const Quorum quorum = quorumHere(gang);
    finish(
        gang, plan.decision.next() == proto::JobDecision::STOP ? proto::STOPPED : proto::FAILED,
        plan.decision.reason() +
            (quorum.majority ? ""
                             : " (decided here without a majority: " + describeWait(quorum) + ")"),
        !quorum.majority);
    return;
  }
  if (const std::string why = reasonToWait(gang, plan); !why.empty()) {
    const double timeout = rejoinTimeout(gang.launch.restart());
    if (!gang.rejoin_until) {
      gang.rejoin_until =
          now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
      parts_.log("job " + gang.launch.job_id() + ": waiting up to " + formatSeconds(timeout) +
                 " s, " + why);
    }
    if (now < *gang.rejoin_until) return journalWait(gang, plan, why);
    if (!quorumHere(gang).majority) {
      finish(gang, proto::FAILED,
             cause.cause() + " (no restart: " + why + ", and none answered within " +
                 formatSeconds(timeout) + " s)",
             /*without_majority=*/true);
      return;
    }
  }
  if (plan.uncounted && plan.next.refused.empty()) ++gang.uncounted_restarts;
  if (!plan.next.refused.empty()) {
    std::string refused = plan.next.refused;
    if (gang.rejoin_until) {
      refused += "; the lost agents did not answer within " +
                 formatSeconds(rejoinTimeout(gang.launch.restart())) + " s";
    }
    finish(gang, proto::FAILED, cause.cause() + " (no restart: " + refused + ")");
    return;
  }
  // The leader's own host is left out (exclude_failed_hosts): an attempt starts only once one
  // of its agents has started it (GangHeartbeat.started), so the next agent in line, which
  // finds this one gone ("no gang"), decides in its place.
  if (!memberNamed(plan.next.members, parts_.agent_name)) {
    return leave(gang.launch.job_id(), "its host is left out of attempt " +
                                           std::to_string(attemptOf(gang) + 1) + " (" +
                                           cause.cause() + "); the next agent in line decides");
  }
  gang.next.Clear();
  for (const auto& member : plan.next.members) *gang.next.add_members() = member;
  const double backoff = gang.launch.restart().backoff_seconds();
  gang.restart_at = now + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(std::max(0.0, backoff)));
  gang.restart_record.Clear();
  proto::JobRestart* restart = &gang.restart_record;
  restart->set_next_attempt(attemptOf(gang) + 1);
  restart->set_backoff_seconds(backoff);
  int world = 0;
  for (const auto& member : plan.next.members) {
    restart->add_agents(member.agent());
    world += member.ranks();
  }
  restart->set_world_size(world);
  for (const auto& agent : plan.next.left_out) restart->add_left_out(agent);
  restart->set_reason(cause.cause());
  restart->set_restarts_left(plan.decision.restarts_left());
  parts_.log("job " + gang.launch.job_id() + ": attempt " + std::to_string(attemptOf(gang) + 1) +
             " starts in " + formatSeconds(backoff) + " s");
}

Quorum GangCoordinator::quorumHere(const Gang& gang) const {
  std::vector<std::string> members;
  std::set<std::string> answering{parts_.agent_name}, down;
  for (const auto& member : gang.members) members.push_back(member.agent());
  bool heard_from_all = true;
  for (const auto& [agent, peer] : gang.peers) {
    // Back from a restart, this agent counts only the peers it has heard from since: while it
    // was down the others may have gone on without it (it did not vote), and a split at its
    // return must not let its old view of the attempt decide a second time.
    if (!peer.lost && (!gang.resumed || peer.answered)) answering.insert(agent);
    if (peer.down) down.insert(agent);
    heard_from_all = heard_from_all && (peer.down || peer.answered);
  }
  // Nor does it count itself until it has heard from every agent not known to be down: the
  // others counted it down while it was (its port refused them), and the first in line may have
  // won the even split of the rest alone and gone on; with its vote back, this agent and the
  // one that agent never reached made a second majority of the same attempt.
  if (gang.resumed && !heard_from_all) answering.erase(parts_.agent_name);
  Quorum quorum = quorumOf(members, answering, down);
  // Nor does it win an even split as the first in line: the other half may have decided while
  // it was down.
  if (gang.resumed && quorum.answering < quorum.needed) quorum.majority = false;
  return quorum;
}

std::vector<std::string> GangCoordinator::lostThatMayReturn(const Gang& gang) const {
  std::vector<std::string> agents;
  for (const auto& [agent, peer] : gang.peers) {
    if (lossCanBeUndone(gang, peer)) agents.push_back(agent);
  }
  return agents;
}

std::string GangCoordinator::reasonToWait(const Gang& gang, const Plan& plan) const {
  if (!plan.next.refused.empty() && !plan.next.too_few_agents) return "";
  const std::vector<std::string> may_return = lostThatMayReturn(gang);
  if (may_return.empty()) return "";
  // A client's restart too: the client may reach only this side of a split.
  if (const Quorum quorum = quorumHere(gang); !quorum.majority) {
    return "no majority here: " + describeWait(quorum) + " (lost: " + joined(may_return) + ")";
  }
  if (!plan.next.too_few_agents || plan.by_client) return "";
  return "for " + joined(may_return) + " to answer again: " + plan.next.refused;
}

void GangCoordinator::journalWait(Gang& gang, const Plan& plan, const std::string& why) {
  if (gang.decision && gang.decision->next() == proto::JobDecision::WAIT &&
      gang.decision->reason() == why) {
    return;
  }
  proto::JobDecision decision;
  decision.set_next(proto::JobDecision::WAIT);
  decision.set_restarts_left(plan.decision.restarts_left());
  decision.set_reason(why);
  const auto left = std::chrono::duration<double>(*gang.rejoin_until - timeNow()).count();
  decision.set_wait_until(unixSeconds() + std::max(0.0, left));
  for (const std::string& agent : lostThatMayReturn(gang)) decision.add_waiting_for(agent);
  gang.decision = decision;
  proto::JournalRecord record;
  *record.mutable_job_decision() = decision;
  journal(gang, record);
}

void GangCoordinator::startNextAttempt(Gang& gang) {
  gang.restart_at.reset();
  const proto::GangMember& host = gang.next.members(0);
  gang.next.set_master_addr(host.host_address().empty() ? "127.0.0.1" : host.host_address());
  auto port = reserveFreePort(gang.launch.launcher() == proto::TENSORFLOW
                                  ? static_cast<uint32_t>(gang.launch.world_size())
                                  : 1);
  if (!port.isOk()) {
    finish(gang, proto::FAILED, "no port for the next attempt: " + port.status().message());
    return;
  }
  gang.next.set_master_port(*port);
  // Every peer that is not lost hears of it, those left out too: they leave the gang.
  for (auto& [agent, peer] : gang.peers) {
    if (!peer.lost) propose(gang, agent);
  }
  // In a tree only the children hear it from here, and pass it down once they have taken it
  // up; the beats of the new attempt then bring word of each agent that did (see handle).
  gang.proposed_at = timeNow();
  if (adoptedByMajority(gang)) startProposedAttempt(gang);
}

void GangCoordinator::propose(Gang& gang, const std::string& agent) {
  proto::GangMessage message;
  message.set_attempt(attemptOf(gang) + 1);
  *message.mutable_restart() = gang.next;
  if (send(gang, agent, std::move(message)))
    gang.peers[agent].proposal_request = gang.peers[agent].last_request;
}

// Only an agent that took up this agent's proposal beats in the attempt it proposed, and to
// this agent: a rival proposal of the same attempt (another agent that thought it led) leaves
// its proposer out of the attempt's agents, and so out of the tree and the hubs of those that
// took it up. In a tree, most agents hear of the proposal from their parent and answer their
// parent: their word comes up in the reports of those above them.
void GangCoordinator::noteAdoptions(Gang& gang, Peer& from, const proto::GangHeartbeat& beat) {
  from.adopted = true;
  for (const proto::GangReport& report : beat.below()) {
    if (report.attempt() != attemptOf(gang) + 1) continue;
    if (auto below = gang.peers.find(report.agent()); below != gang.peers.end()) {
      below->second.adopted = true;
    }
  }
  pass_due_ = true;
}

bool GangCoordinator::adoptedByMajority(const Gang& gang) const {
  std::vector<std::string> members;
  std::set<std::string> adopted{parts_.agent_name}, down;
  for (const auto& member : gang.members) members.push_back(member.agent());
  for (const auto& [agent, peer] : gang.peers) {
    if (peer.adopted) adopted.insert(agent);
    if (peer.down) down.insert(agent);
  }
  return quorumOf(members, adopted, down).majority;
}

void GangCoordinator::startProposedAttempt(Gang& gang) {
  gang.proposed_at.reset();
  proto::JournalRecord record;
  *record.mutable_job_restart() = gang.restart_record;
  journal(gang, record);
  startAttempt(gang, attemptOf(gang) + 1, gang.next, /*start_ranks=*/true);
}

void GangCoordinator::startAttempt(Gang& gang, uint32_t attempt, const proto::GangRestart& restart,
                                   bool start_ranks) {
  const std::string job_id = gang.launch.job_id();
  auto launch = launchForAttempt(gang.launch, restart, attempt, parts_.agent_name);
  if (!launch.isOk()) {
    parts_.world->stopRanks(job_id);
    return leave(job_id, "left out of attempt " + std::to_string(attempt));
  }
  gang.launch = *launch;
  gang.next = restart;
  gang.members.assign(restart.members().begin(), restart.members().end());
  connectPeers(gang);
  gang.over_here = false;
  gang.state_here = proto::RANK_STATE_UNSPECIFIED;
  gang.progress_here.clear();
  gang.hang_stage.clear();
  gang.failures.clear();
  gang.journaled.reset();
  gang.journal_failure_at.reset();
  gang.decision.reset();
  gang.restart_at.reset();
  gang.proposed_at.reset();
  gang.rejoin_until.reset();
  gang.started = false;
  gang.resumed = false;  // the attempt came from a majority's word
  save(gang);
  if (start_ranks) {
    startRanksHere(gang);
  } else {
    parts_.log("job " + job_id + " attempt " + std::to_string(attempt) +
               ": taken up; its ranks start once a majority of the agents has taken it up");
  }
}

void GangCoordinator::startRanksHere(Gang& gang) {
  const std::string& job_id = gang.launch.job_id();
  const uint32_t attempt = attemptOf(gang);
  gang.started = true;
  gang.next_heartbeat = timeNow();  // those that wait for the word hear it at once
  pass_due_ = true;
  auto pids = parts_.world->startRanks(gang.launch);
  if (!pids.isOk()) {
    onFailure(gang,
              agentFailure("launch", parts_.agent_name,
                           "agent " + parts_.agent_name + " could not start attempt " +
                               std::to_string(attempt) + ": " + pids.status().message()),
              true);
    if (!parts_.world->ranksActive(job_id)) {  // nothing started: over here already
      gang.over_here = true;
      gang.state_here = proto::FAILED;
    }
    return;
  }
  parts_.log("job " + job_id + " attempt " + std::to_string(attempt) + ": started " +
             std::to_string(pids->size()) + " rank(s) of " +
             std::to_string(gang.launch.world_size()));
}

void GangCoordinator::stopRanksHere(Gang& gang) {
  parts_.world->stopRanks(gang.launch.job_id());
  if (!gang.started && !gang.over_here) {
    gang.over_here = true;
    gang.state_here = proto::STOPPED;
  }
}

void GangCoordinator::finish(Gang& gang, proto::RankState state, const std::string& cause,
                             bool without_majority) {
  proto::JobOutcome outcome;
  outcome.set_state(state);
  outcome.set_cause(cause);
  outcome.set_attempts(attemptOf(gang));
  gang.outcome = outcome;
  forget(gang.launch.job_id());
  gang.restart_at.reset();
  gang.proposed_at.reset();
  gang.drop_at = timeNow() + kLinger;
  gang.next_heartbeat = timeNow();  // the peers hear of it at once (see onTimer)
  // Whatever it decided, a side cut off from the majority may have decided otherwise than the
  // majority (the rest of the job succeeded while this side lost it): its word gives way.
  if (without_majority || !quorumHere(gang).majority) {
    journalOutcome(gang, /*without_majority=*/true);
  } else {
    gang.outcome_known_by = timeNow() + kLostAfter;  // the others lose it if it is cut off
    if (outcomeKnownByMajority(gang)) journalOutcome(gang, /*without_majority=*/false);
  }
}

void GangCoordinator::journalOutcome(Gang& gang, bool without_majority) {
  gang.outcome_known_by.reset();
  gang.outcome->set_without_majority(without_majority);
  proto::JournalRecord record;
  *record.mutable_job_outcome() = *gang.outcome;
  journal(gang, record);
  const std::string& cause = gang.outcome->cause();
  parts_.log("job " + gang.launch.job_id() + " " + describeState(gang.outcome->state()) +
             " after " + std::to_string(gang.outcome->attempts()) + " attempt(s)" +
             (cause.empty() ? "" : ": " + cause) +
             (without_majority ? " (decided without a majority of its agents)" : ""));
  // The lost agents keep hearing it for longer: see Gang::minority_outcome.
  if (without_majority) {
    gang.minority_outcome = true;
    gang.drop_at = timeNow() + kMinorityLinger;
  }
}

// Those that answered the outcome, and in a tree the agents below them too: each passes it on
// to its children and lingers until they answer. Counted as quorumHere counts those that answer.
bool GangCoordinator::outcomeKnownByMajority(const Gang& gang) const {
  std::vector<std::string> members;
  std::set<std::string> knowing{parts_.agent_name}, down;
  std::vector<bool> lost(gang.members.size(), false);
  for (size_t i = 0; i < gang.members.size(); ++i) {
    const std::string& agent = gang.members[i].agent();
    members.push_back(agent);
    auto peer = gang.peers.find(agent);
    if (peer != gang.peers.end()) lost[i] = peer->second.lost;
  }
  for (size_t i = 0; i < gang.members.size(); ++i) {
    auto peer = gang.peers.find(members[i]);
    if (peer == gang.peers.end()) continue;
    if (peer->second.down) down.insert(members[i]);
    if (!peer->second.knows_outcome) continue;
    knowing.insert(members[i]);
    if (!gang.tree) continue;
    for (size_t below : treePlace(i, lost, gangFanout()).below) knowing.insert(members[below]);
  }
  return quorumOf(members, knowing, down).majority;
}

void GangCoordinator::rememberEnded(const std::string& job_id, uint32_t attempt,
                                    proto::RankState state, const std::string& key) {
  constexpr size_t kEndedKept = 1024;  // about 100 kB
  auto forgetEnded = [&](const Ended& e) {
    if (e.key.empty() || e.key == key) return;
    const bool in_use = std::any_of(gangs_.begin(), gangs_.end(), [&](const auto& entry) {
      return entry.second.launch.rendezvous_public_key() == e.key;
    });
    if (!in_use) parts_.world->revokeKey(e.key);
  };
  std::erase_if(ended_, [&](const Ended& e) {
    if (e.job_id != job_id) return false;
    forgetEnded(e);
    return true;
  });
  if (ended_.size() >= kEndedKept) {
    forgetEnded(ended_.front());
    ended_.erase(ended_.begin());
  }
  ended_.push_back({job_id, attempt, state, key});
}

const GangCoordinator::Ended* GangCoordinator::endedHere(const std::string& job_id) const {
  for (const Ended& e : ended_) {
    if (e.job_id == job_id) return &e;
  }
  return nullptr;
}

// Erased by onTimer: callers may hold references to the gang.
void GangCoordinator::leave(const std::string& job_id, const std::string& why) {
  auto it = gangs_.find(job_id);
  if (it == gangs_.end() || it->second.left) return;
  parts_.log("job " + job_id + ": " + why + "; this agent leaves the job");
  forget(job_id);
  parts_.world->stopRanks(job_id);
  it->second.left = true;
  pass_due_ = true;  // erased on the next pass
}

GangCoordinator::Clock::time_point GangCoordinator::onTimer(Clock::time_point now) {
  // A prepared job that was not launched: its key goes with its slots (unless a gang of the
  // job holds the same key). Cheap, and due the moment a client stops the job: every call.
  for (auto it = expected_.begin(); it != expected_.end();) {
    if (parts_.world->ranksActive(it->first)) {
      ++it;
      continue;
    }
    auto gang = gangs_.find(it->first);
    if (gang == gangs_.end() || gang->second.launch.rendezvous_public_key() != it->second.key) {
      parts_.world->revokeKey(it->second.key);
    }
    it = expected_.erase(it);
  }
  if (!pass_due_ && now < next_pass_) return next_pass_;
  pass_due_ = false;  // what the pass itself does may set it again: then the next call passes too
  next_pass_ = passOverGangs(now);
  return next_pass_;
}

GangCoordinator::Clock::time_point GangCoordinator::passOverGangs(Clock::time_point now) {
  Clock::time_point wake = now + std::chrono::seconds(1);
  for (auto it = gangs_.begin(); it != gangs_.end();) {
    Gang& gang = it->second;
    if (gang.left) {
      parts_.world->revokeKey(gang.launch.rendezvous_public_key());
      it = gangs_.erase(it);
      continue;
    }
    reopenUnansweredConnections(gang, now);
    if (gang.outcome) {
      if (gang.outcome_known_by) {
        if (outcomeKnownByMajority(gang)) {
          journalOutcome(gang, /*without_majority=*/false);
        } else if (now >= *gang.outcome_known_by || now >= gang.drop_at) {
          journalOutcome(gang, /*without_majority=*/true);
        } else {
          wake = std::min(wake, *gang.outcome_known_by);
        }
      }
      if (now >= gang.drop_at) {
        const std::string key = gang.launch.rendezvous_public_key();
        const std::string job_id = gang.launch.job_id();
        const uint32_t attempt = attemptOf(gang);
        const proto::RankState state = gang.outcome->state();
        it = gangs_.erase(it);
        rememberEnded(job_id, attempt, state, key);
        continue;
      }
      // An agent cut off by the network may come back and must then hear that it was left out
      // (it may be a lost peer, or out of this attempt already): the leader lingers for it,
      // unless it is known to be down for good.
      // In a tree each agent passes it on to its children, and knows of them only.
      const bool none_left_out = static_cast<int>(gang.members.size()) >= gang.original_agents;
      const bool everyone_knows =
          (none_left_out || !leads(gang) || gang.minority_outcome) &&
          std::all_of(gang.peers.begin(), gang.peers.end(), [&](const auto& entry) {
            const Peer& peer = entry.second;
            return peer.down || peer.knows_outcome ||
                   (!gang.minority_outcome && !passesOnTo(gang, entry.first));
          });
      if ((leads(gang) || gang.tree || gang.minority_outcome) && everyone_knows) {
        gang.drop_at = std::min(gang.drop_at, leads(gang) ? now : now + kMemberLinger);
      }
      if (now >= gang.next_heartbeat && now < gang.drop_at) {
        for (auto& [agent, peer] : gang.peers) {
          // A side without a majority tells its own agents as any side does (they waited with
          // it), and the lost ones too: their answer at the heal says whether they went on.
          const bool tell = gang.minority_outcome && peer.lost
                                ? !peer.down
                                : passesOnTo(gang, agent) && !peer.lost;
          if (!tell || peer.knows_outcome) continue;
          proto::GangMessage message;
          *message.mutable_outcome() = *gang.outcome;
          send(gang, agent, std::move(message));
        }
        scheduleHeartbeat(gang, now);
      }
      wake = std::min({wake, gang.drop_at, gang.next_heartbeat});
      ++it;
      continue;
    }
    for (auto& [name, peer] : gang.peers) {
      if (peer.lost || !peer.watched || now - peer.last_heard <= kLostAfter) continue;
      const auto silent = std::chrono::duration_cast<std::chrono::seconds>(now - peer.last_heard);
      if (now - peer.last_heard <= kBusyFor && peer.connection && peer.connection->alive()) {
        if (!peer.busy_noted) {
          parts_.log("job " + gang.launch.job_id() + ": agent " + name + " has not answered for " +
                     std::to_string(silent.count()) +
                     " s but its connection is up (busy): waiting up to " +
                     std::to_string(kBusyFor.count()) + " s");
        }
        peer.busy_noted = true;
        continue;
      }
      const proto::GangMember* member = memberNamed(gang.members, name);
      const bool down = member && parts_.world->refusesConnections(member->endpoint());
      const std::string state = down ? "its host refuses connections on its port: the agent is down"
                                : peer.connection ? peer.connection->describeState()
                                                  : "no connection to it";
      markLost(gang, name,
               "not heard from for " + std::to_string(silent.count()) + " s (" + state + ")", down);
    }
    if (now >= gang.next_heartbeat) sendHeartbeats(gang);
    if (leads(gang)) {
      journalDecision(gang);
      if (!gang.failures.empty() && !gang.journal_failure_at)
        gang.journal_failure_at = now + kSettle;
      // Only a side that holds a majority speaks for the job: the cause a cut-off agent sees
      // ("agent a1 lost") is its own view, and told by the history as the job's, it named the
      // wrong agent beside the majority's waiting.
      const auto speaks = [&] { return quorumHere(gang).majority; };
      if (gang.journal_failure_at && now >= *gang.journal_failure_at && speaks()) {
        journalRootCause(gang);
      }
      checkForHang(gang);
      if (overEverywhere(gang)) {
        if (!gang.failures.empty() && speaks()) journalRootCause(gang);
        decide(gang, now);
      }
      if (gang.restart_at && now >= *gang.restart_at) startNextAttempt(gang);
      if (gang.proposed_at && !gang.left) {
        if (adoptedByMajority(gang)) {
          startProposedAttempt(gang);
        } else if (now - *gang.proposed_at >=
                   std::chrono::duration<double>(rejoinTimeout(gang.launch.restart()))) {
          // The agents that took it up wait at its rendezvous; the outcome tells them to stop.
          finish(gang, proto::FAILED,
                 "no majority of the agents took up attempt " +
                     std::to_string(attemptOf(gang) + 1) + " within " +
                     formatSeconds(rejoinTimeout(gang.launch.restart())) + " s",
                 /*without_majority=*/true);
        }
      }
      if (gang.left) {  // left out of the attempt it started: erased on the next call
        ++it;
        continue;
      }
      // (A side without a majority journals none: then the time is past, and no wake is due.)
      if (gang.journal_failure_at && !gang.journaled && now < *gang.journal_failure_at)
        wake = std::min(wake, *gang.journal_failure_at);
      if (gang.restart_at) wake = std::min(wake, *gang.restart_at);
      if (gang.proposed_at) wake = std::min(wake, now + kHeartbeatEvery);
    }
    wake = std::min(wake, gang.next_heartbeat);
    ++it;
  }
  return wake;
}

}  // namespace ringmaster::agent

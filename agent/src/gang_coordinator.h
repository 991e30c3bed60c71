#pragma once
// The agents of a job handle its failures among themselves, with or without a client connected
// (DESIGN.md §3 "Failure"). Each agent keeps one Gang per job it runs: the job's other agents,
// reached with the job's own key pair (ZAP admits it as "job:<id>"), and the attempt's state.
// - Heartbeats every 500 ms carry each agent's ranks' progress, whether its share of the attempt
//   is over, and the attempt's failure once known. An agent not heard from for 4 s is lost,
//   unless its connection is up (its I/O threads answer libzmq's heartbeats): then it is busy,
//   and lost after 30 s.
// - The gang is a star with two hubs, the first two agents in line that are not lost: the leader
//   and its standby. Each other agent talks to the hubs only, the hubs to every agent, so a job
//   of N agents has O(N) connections and messages, not N². The standby hears everything the
//   leader hears and takes over at once when the leader is lost; the hubs pass on each failure
//   and stop request the moment they hear it, and beat to the other agents only while there is
//   such news (the answers to an agent's own beats show it the hubs are there). Each agent
//   watches for silence only the agents it talks to (a new hub is given a fresh 4 s).
// - A gang of more than 6 agents is a tree instead (gang_tree.h): each agent beats to its parent
//   every second and answers its children, whose silence it watches as a hub does, and its beats
//   carry what it knows of every agent below it (GangReport: attempt, over, state, stalled ranks,
//   lost), so the leader knows every agent while it talks to 2. News (a failure, a stop) floods
//   the tree's edges the moment it is heard, a change below goes up at once, a restart and the
//   outcome go down from each agent to its children. An agent whose parent is lost reports to the
//   nearest ancestor that is not; there is no standby (the root's first child leads once the root
//   is found lost, and hears the other subtrees as they turn to it).
// - A failure anywhere (a rank failed, an agent lost, a hang) fails the attempt: every agent
//   stops its ranks of it at once (the supervisor escalates SIGTERM to SIGKILL).
// - The leader, the first agent of the attempt that is not lost, journals the attempt's root
//   cause (JobFailure), judges hangs over every rank, and once every agent's ranks are gone
//   decides: the next attempt, or the end of the job (JobOutcome). The next attempt is proposed
//   (GangRestart to every agent, in a tree passed down by each agent that took it up); the
//   leader journals it (JobRestart) and starts its own ranks once a majority of the attempt's
//   agents took it up (their acknowledgements, and in a tree their beats of the new attempt,
//   see noteAdoptions), and an agent takes up one proposal of an attempt only (see
//   Gang::proposed_at). When the leader is lost, the next agent in line takes over.
// - A lost agent may only be cut off. Until the next attempt is decided its loss can be undone:
//   it keeps getting heartbeats, and when it answers it is a member again. The leader waits up
//   to restart.rejoin_timeout_seconds for such agents when the job cannot go on without them
//   (min_nodes). Only a side holding a majority of the attempt's agents decides (gang_quorum.h):
//   a smaller side of a network split stops its ranks, says it waits (JobDecision WAIT), and
//   fails the attempt after the rejoin timeout, never starting one of its own, whatever
//   min_nodes says; when the link is back, the other side's agents tell it that it was left
//   out (or that the job is over, see Ended), and it leaves. An agent whose host refuses
//   connections on its port is down: it does not vote, but until the decision it may come back
//   (an agent that restarts takes up its gangs again, see resume); one that answers that it has
//   no gang for the job forgot it, and is lost for good.
// - An agent that restarts (SIGTERM, kill -9, a reboot) finds its gangs in its ledger
//   (gang_ledger.h) and takes each up again, its attempt over here: the leader decides the next
//   attempt as after any failure, and a clean shutdown's uses none of the policy's restarts.
//
// It reaches everything outside its decisions (connections, ranks, journal, ledger, ZAP, time)
// through GangWorld (gang_world.h): the same code runs in the agent and in the gang's
// deterministic simulation (tests/agent/gang_simulation.h).
//
// Thread-safety: none; the agent's main thread owns it, like the supervisor it drives.

#include <zmq.h>

#include <array>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gang_ledger.h"
#include "gang_policy.h"
#include "gang_quorum.h"
#include "gang_tree.h"
#include "gang_world.h"
#include "interrupted_jobs.h"
#include "job_supervisor.h"
#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::agent {

class GangCoordinator {
 public:
  using Clock = std::chrono::steady_clock;
  using Logger = std::function<void(const std::string&)>;

  struct Parts {
    std::string agent_name;
    GangWorld* world = nullptr;  // everything outside the decisions (gang_world.h); outlives it
    Logger log;
  };
  explicit GangCoordinator(Parts parts);
  ~GangCoordinator();

  // A client prepared an attempt here (the supervisor holds its slots): the job's key is
  // admitted from now on rather than from join(). Each agent joins once its own ranks have
  // started; a peer that had not admitted the key by then refused the first handshake (libzmq
  // never retries one, see reopenUnansweredConnections), and a short job was over before its
  // agents could tell each other so. Let go when no join() follows while the job is active.
  void expect(const proto::JobLaunch& launch);
  // Just before the supervisor starts the ranks (every agent of the job has admitted its key
  // at prepare): opens the connections join() will use, so that their CURVE handshakes go on
  // while the ranks start.
  void connectEarly(const proto::JobLaunch& launch);
  // A client launched an attempt here: watch it with the job's other agents.
  void join(const proto::JobLaunch& launch);
  // At start, before any request: the gangs an earlier agent process saved go on from what its
  // journal says (`earlier`). A job whose outcome it journaled is remembered as over (Ended);
  // each other is taken up again with its attempt over here (failed, or stopped by a clean
  // shutdown), and its agents decide the next attempt as after any failure.
  void resume(const std::vector<SavedGang>& saved, const EarlierRun& earlier);
  // The agent shuts down on a signal (its ranks are stopped next): each gang's peers hear why,
  // and the ledger keeps that the stop was clean.
  void shutDown();
  // A GangMessage from another agent of the job (the router checked it carries the job's key).
  proto::Envelope handle(const proto::Envelope& request);
  // What the supervisor saw: rank failures, attempts over.
  void onSupervisorEvents(const std::vector<AttemptEvent>& events);
  // A client stopped the job: no further attempt, and the other agents stop theirs. False when
  // this agent has no gang for the job.
  bool stopRequested(const std::string& job_id);
  // A client asked for a new attempt (without `exclude_agent` when set). NotFound when this
  // agent has no gang for the job (it is over, or never ran here).
  Status restartRequested(const proto::RestartJob& request);

  // The sockets to the other agents, for the agent's poll loop: POLLIN (their replies arrive
  // there), and POLLOUT where a message found the connection still in its handshake.
  std::vector<zmq_pollitem_t> pollItems() const;
  void onReadable();
  // Those of pollItems() whose connection is now up: what they missed is sent at once (on the
  // next onTimer), not after the resend wait.
  void onWritable(const std::vector<void*>& sockets);
  // Heartbeats, losses, hang verdicts, decisions and restarts that are due; returns when it next
  // needs a call. Cheap when nothing changed since the last pass and nothing is due: the agent's
  // loop calls it at every wakeup, and the leader of N agents wakes for 2N beats a second, so a
  // pass over every peer at each call cost it O(N²) (121 ms of CPU a second at 128 agents).
  Clock::time_point onTimer(Clock::time_point now);

  // Whether the job still has a gang here (its key must stay admitted, e.g. between attempts).
  bool manages(const std::string& job_id) const;
  // No job has a gang here (every one is over and has stopped lingering).
  bool idle() const { return gangs_.empty(); }

 private:
  struct Peer {
    std::unique_ptr<GangLink> connection;
    // The first message sent on `connection` since its last reply: every gang message is answered.
    std::optional<Clock::time_point> unanswered_since;
    Clock::time_point last_heard;
    bool answered = false;  // it has answered as a member: it knows the job
    bool watched = false;   // this agent talks to it and counts its silence (talksTo)
    // Messages sent on `connection` and replies to them. Only a connection with a message
    // unanswered is polled (awaitsReply). A reply is matched to its message by request id, not
    // by count: a connection that drops loses what was on the way, and after it the nth reply
    // was not the nth message's (a peer's refusal of a proposal read as another's yes let two
    // rival leaders each count a majority).
    uint64_t sent = 0;
    uint64_t replies = 0;
    uint64_t last_request = 0;     // the request id of the last message sent
    uint64_t outcome_request = 0;  // of the first outcome message sent; 0: none
    bool missed = false;           // the last message found the connection not up (see onWritable)
    bool awaitsReply() const { return connection && (sent > replies || missed); }
    bool knows_outcome = false;
    // The request id of the last proposal of the next attempt sent on `connection` (0: none),
    // and whether the peer acknowledged it: it took the attempt up (see Gang::proposed_at).
    uint64_t proposal_request = 0;
    bool adopted = false;
    bool started = false;  // its ranks of `attempt` started (GangHeartbeat.started)
    bool lost = false;
    bool busy_noted = false;  // silent past kLostAfter with its connection up: logged once
    bool down = false;        // lost, and its host refuses its port (see peer_probe.h): no vote
    bool forgot = false;      // it answered that it has no gang for the job: lost for good
    Clock::time_point lost_at;
    uint32_t attempt = 0;       // the newest attempt it spoke of
    bool attempt_over = false;  // its ranks of `attempt` are gone
    proto::RankState state = proto::RANK_STATE_UNSPECIFIED;
    std::vector<proto::RankProgress> progress;  // in a tree, of a peer below: its stalled ranks
    double slowest_step = 0;                    // of all its ranks
  };
  struct Gang {
    proto::JobLaunch launch;                 // this agent's share of the current attempt
    std::vector<proto::GangMember> members;  // the attempt's agents, group-rank order
    std::map<std::string, Peer> peers;       // the members but this agent
    // The first two members in line that are not lost, this agent included: the leader and
    // its standby (findHubs). "" where there is none, and in a tree.
    std::array<std::string, 2> hubs;
    // A tree (gang_tree.h) instead of the star: this agent reports to `parent` ("" for the
    // leader), talks to it and its children (`contacts`), and reports on the agents `below`.
    bool tree = false;
    std::string parent;
    std::set<std::string> contacts;
    std::vector<std::string> below;
    Clock::time_point last_beat;  // a change heard from below goes up at once, this often at most
    // What this agent last told `reported_to` of each agent below (a serialized GangReport): a
    // beat carries only the reports that changed, and all of them every kFullReportEvery beats
    // and to a new parent (a parent that came back, or a beat lost with a connection).
    std::map<std::string, std::string> reported;
    std::string reported_to;
    int beats_since_full_report = 0;
    int original_agents = 1;  // min_nodes defaults to all of them
    bool resumed = false;     // taken up again after this agent restarted (see quorumHere)
    uint32_t first_attempt = 1;
    // Attempts that used none of the policy's restarts: a client asked for them, or an agent
    // was shut down cleanly.
    uint32_t uncounted_restarts = 0;
    // The current attempt.
    // Its ranks started here. False after taking up another agent's proposal: they start once
    // an agent that started them says so (GangHeartbeat.started), which only the proposer, with
    // a majority, can be the first to.
    bool started = true;
    bool over_here = false;
    proto::RankState state_here = proto::RANK_STATE_UNSPECIFIED;
    std::vector<proto::RankProgress> progress_here;
    std::string hang_stage;                   // journaled: "" (none), suspected or hung
    std::vector<proto::JobFailure> failures;  // every failure heard of, in order
    std::optional<size_t> journaled;          // the failure journaled as the root cause
    std::optional<Clock::time_point> journal_failure_at;
    std::optional<proto::JobDecision> decision;  // journaled for the current attempt
    bool stopping = false;
    std::optional<Clock::time_point> restart_at;  // decided: the next attempt is proposed then
    // Proposed (a star's leader, after the backoff): the next attempt's agents were sent it, and
    // this agent journals it and starts its own ranks once a majority of the current attempt's
    // agents took it up (adoptedByMajority). Cut off from each other but not from a third, two
    // agents may both lead a majority in their own view and propose; the third takes one
    // attempt up and refuses the other, whose proposer leaves without a trace in the history.
    std::optional<Clock::time_point> proposed_at;
    proto::JobRestart restart_record;  // journaled when the proposed attempt starts here
    std::optional<Clock::time_point> rejoin_until;  // waiting for lost agents to answer again
    proto::GangRestart next;
    std::optional<proto::JobOutcome> outcome;  // decided: the gang lingers, then goes
    // The outcome was decided (or heard) without a majority of the attempt here: the lost
    // agents keep hearing it for kMinorityLinger, and one that answers "left out" ends it.
    bool minority_outcome = false;
    // Decided here, not journaled yet: an outcome is the job's once a majority of the attempt
    // knows it (outcomeKnownByMajority), or this side's alone, journaled so, if none does by
    // then. A leader whose own messages were lost (a one-way loss) heard every rank end and
    // decided "succeeded" while the others, no longer hearing it, decided "failed": two outcomes
    // of one attempt, each with a majority in its own view.
    std::optional<Clock::time_point> outcome_known_by;
    Clock::time_point drop_at;
    Clock::time_point next_heartbeat;
    // A message found a peer not connected yet (a new attempt's connections are in their CURVE
    // handshake for a few ms): the next heartbeat comes after resend_after, not the interval.
    bool unsent = false;
    Clock::duration resend_after{};
    bool left = false;  // this agent is out of the job; dropped on the next timer
  };

  Clock::time_point timeNow() const { return parts_.world->now(); }
  uint32_t attemptOf(const Gang& gang) const { return gang.launch.attempt(); }
  bool leads(const Gang& gang) const;
  bool isHub(const Gang& gang, const std::string& agent) const {
    return gang.hubs[0] == agent || gang.hubs[1] == agent;
  }
  // In a star, hubs talk to every peer, the other agents to the hubs only; in a tree, each agent
  // to its parent and children.
  bool talksTo(const Gang& gang, const std::string& agent) const {
    if (gang.tree) return gang.contacts.count(agent) > 0;
    return isHub(gang, parts_.agent_name) || isHub(gang, agent);
  }
  // Those this agent beats to every interval (the others only hear news from it).
  bool reportsTo(const Gang& gang, const std::string& agent) const {
    return gang.tree ? agent == gang.parent : isHub(gang, agent);
  }
  // Those it passes the outcome and a missed restart on to.
  bool passesOnTo(const Gang& gang, const std::string& agent) const {
    return gang.tree ? talksTo(gang, agent) && agent != gang.parent : leads(gang);
  }
  // Where this agent is in the tree, `lost` as it sees them; in a star, the hubs.
  void placeInTree(Gang& gang);
  void findHubs(Gang& gang);
  // What a tree's beat to the parent adds: the agents below whose report changed since the
  // last one the parent got (see GangReport), all of them when a full report is due. Those
  // reports, serialized, go to `sent_reports`: sendHeartbeats keeps them once the beat is sent.
  void reportBelow(Gang& gang, proto::GangHeartbeat& beat,
                   std::vector<std::pair<std::string, std::string>>* sent_reports) const;
  void applyReports(Gang& gang, const proto::GangHeartbeat& beat);
  // In a tree, news from below goes up before the next interval (not sooner than kQuickReport
  // after the last beat: a thousand agents ending their ranks are not a thousand beats).
  void reportSoon(Gang& gang);
  // Finds the hubs again (after a loss was declared or undone, or a new attempt); a peer that has
  // just become one to talk to gets a connection and a fresh silence clock, and one that no
  // longer is loses its connection.
  void watchContacts(Gang& gang, Clock::time_point now);
  bool overEverywhere(const Gang& gang) const;
  void connectPeers(Gang& gang);
  // A fresh connection to `member`, its message counts at zero.
  void openConnection(const Gang& gang, Peer& peer, const proto::GangMember& member);
  void reopenUnansweredConnections(Gang& gang, Clock::time_point now);
  // False when it could not be handed to the peer's connection.
  bool send(Gang& gang, const std::string& agent, proto::GangMessage message);
  void sendHeartbeats(Gang& gang);
  void scheduleHeartbeat(Gang& gang, Clock::time_point now);
  // A beat of another attempt than this agent's: how far the sender got (see overEverywhere).
  void noteOtherAttempt(Gang& gang, Peer& from, const proto::GangHeartbeat& beat);
  // Whether a failure of that cause was heard of already.
  bool knowsFailure(const Gang& gang, const proto::JobFailure& failure) const;
  // A failure of the current attempt: stop the ranks here; the peers hear of it at once.
  void onFailure(Gang& gang, const proto::JobFailure& failure, bool tell_peers);
  void markLost(Gang& gang, const std::string& agent, const std::string& why, bool down,
                bool forgot = false);
  // Until the next attempt is decided, a lost agent that answers again is a member again.
  bool lossCanBeUndone(const Gang& gang, const Peer& peer) const {
    return peer.lost && !peer.forgot && !gang.outcome && !restartDecided(gang);
  }
  bool restartDecided(const Gang& gang) const {
    return gang.restart_at.has_value() || gang.proposed_at.has_value();
  }
  bool lostForGood(const Gang& gang, const Peer& peer) const {
    return peer.lost && !lossCanBeUndone(gang, peer);
  }
  // What the leader does about the attempt's failure or stop, from what it knows now.
  struct Plan {
    proto::JobDecision decision;
    NextAttempt next;        // RESTART: where
    bool by_client = false;  // a client asked for the restart
    bool uncounted = false;  // it uses none of the policy's restarts (a client's, a clean shutdown)
    bool may_wait = false;   // lost agents may come back and change it (reasonToWait)
  };
  Plan planAfterFailure(const Gang& gang) const;
  // Whether this side holds a majority of the attempt's agents (gang_quorum.h): those not lost
  // answer, those known down do not vote.
  Quorum quorumHere(const Gang& gang) const;
  // The lost agents whose loss can still be undone (lossCanBeUndone), by name.
  std::vector<std::string> lostThatMayReturn(const Gang& gang) const;
  // Why the decision waits for lost agents that may come back; "" when it may be made now. This
  // side holds no majority of the attempt (it may be the smaller side of a split whose other
  // side goes on: only one may, DESIGN.md §3 "One copy"), or the job cannot go on without them
  // (min_nodes). A decision both sides would make alike (restarts used up) does not wait.
  std::string reasonToWait(const Gang& gang, const Plan& plan) const;
  // While the decision waits: the wait journaled (JobDecision WAIT, again when its reason
  // changes), so that the job reads "waiting", never "running" with every rank stopped.
  void journalWait(Gang& gang, const Plan& plan, const std::string& why);
  // The leader journals its decision the moment the attempt fails or is stopped, and again when
  // it changes (an agent lost later), so that no client predicts it.
  void journalDecision(Gang& gang);
  void journalRootCause(Gang& gang);
  void checkForHang(Gang& gang);
  void decide(Gang& gang, Clock::time_point now);
  // After the backoff: the next attempt proposed to its agents (in a tree, started at once).
  void startNextAttempt(Gang& gang);
  void propose(Gang& gang, const std::string& agent);
  // The agents whose beat `beat` (of the proposed attempt) shows to have taken it up.
  void noteAdoptions(Gang& gang, Peer& from, const proto::GangHeartbeat& beat);
  bool adoptedByMajority(const Gang& gang) const;
  // The proposed attempt taken up by a majority: journaled, and started here.
  void startProposedAttempt(Gang& gang);
  // `attempt` becomes the current one here; its ranks start when `start_ranks` (this agent
  // started it, or heard that it was started), else once it hears so.
  void startAttempt(Gang& gang, uint32_t attempt, const proto::GangRestart& restart,
                    bool start_ranks);
  void startRanksHere(Gang& gang);
  // The ranks here are stopped; ranks that never started are over at once.
  void stopRanksHere(Gang& gang);
  void finish(Gang& gang, proto::RankState state, const std::string& cause,
              bool without_majority = false);
  // Journals the outcome decided here (see Gang::outcome_known_by).
  void journalOutcome(Gang& gang, bool without_majority);
  bool outcomeKnownByMajority(const Gang& gang) const;
  void journal(const Gang& gang, proto::JournalRecord& record);
  void leave(const std::string& job_id, const std::string& why);
  // The gang as it now stands, for a restart of this agent (the ledger); removed once this agent
  // knows the job's outcome or leaves it.
  void save(const Gang& gang, bool stopped_cleanly = false);
  void forget(const std::string& job_id);
  // A new gang for `launch`, its key admitted: what join() and resume() share.
  Gang& addGang(const proto::JobLaunch& launch);

  // onTimer's pass over every gang; returns when the next one is due.
  Clock::time_point passOverGangs(Clock::time_point now);

  Parts parts_;
  // Something happened that onTimer's pass must look at (a failure, a stop, an attempt over, a
  // new gang) rather than only at next_pass_: every entry point but a heartbeat that changes
  // nothing but progress, and a plain acknowledgement, sets it.
  bool pass_due_ = true;
  Clock::time_point next_pass_{};
  std::map<std::string, Gang> gangs_;
  // Jobs prepared or launching here and not joined yet (see expect()).
  struct Expected {
    std::string key;                                               // the job's public key, admitted
    std::map<std::string, std::unique_ptr<GangLink>> connections;  // by agent
  };
  std::map<std::string, Expected> expected_;  // by job id
  // Jobs whose gang here has decided and gone, newest last, so that an agent cut off from it
  // (the smaller side of a split, a leader that went on alone) learns at the heal that the job
  // is over rather than "no gang": a bounded list, the oldest forgotten first.
  // Its key stays admitted while it is remembered: a peer that opens a new connection to this
  // agent (a tree's agent whose parent was lost) must get that answer, not a refused handshake,
  // which it took for a busy agent for 30 s, one agent in line after the other.
  struct Ended {
    std::string job_id;
    uint32_t attempt = 0;  // the last attempt it ran
    proto::RankState state = proto::RANK_STATE_UNSPECIFIED;
    std::string key;  // the job's public key; "" when it ended in an earlier agent process
  };
  void rememberEnded(const std::string& job_id, uint32_t attempt, proto::RankState state,
                     const std::string& key = "");
  const Ended* endedHere(const std::string& job_id) const;
  std::vector<Ended> ended_;
};

}  // namespace ringmaster::agent

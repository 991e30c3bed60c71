#include "gang_simulation.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <vector>

#include "gang_coordinator.h"
#include "gang_world.h"
#include "interrupted_jobs.h"
#include "ringmaster/protocol/codec.h"
#include "ringmaster/security/keys.h"

namespace ringmaster::agent::sim {
namespace {

using Clock = std::chrono::steady_clock;
using Time = Clock::time_point;
using Duration = Clock::duration;

Duration seconds(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

const std::string kJob = "job-sim";
// The ranks step this often while their whole attempt runs and reaches itself.
constexpr double kTick = 0.25;
// libzmq drops a connection whose ZMTP pings go unanswered this long (3 intervals of 1 s).
constexpr double kDropAfter = 3;
constexpr double kSettleCap = 1200;  // after the last fault, the job must be over by then

std::string tenths(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string stateName(proto::RankState state) {
  switch (state) {
    case proto::SUCCEEDED:
      return "succeeded";
    case proto::STOPPED:
      return "stopped";
    case proto::FAILED:
      return "failed";
    default:
      return "unknown";
  }
}

class Simulation;

// The ranks of one attempt on one agent (one rank per agent).
struct RankRun {
  uint32_t attempt = 0;
  std::string copy;  // "3:a1,a2,a4": the attempt and its agents, which tell copies apart
  std::vector<int> members;
  bool active = true;
  bool exiting = false;  // its exit is scheduled
  int64_t steps = 0;
  Time started, last_step;
};

// What the network knows of one connection (a link) between two agents' coordinators.
struct LinkState {
  int from = 0, to = 0;
  std::string key;  // the job's public key, which the peer's ZAP must admit
  bool connected = false;
  bool refused = false;
  uint64_t epoch = 0;            // a new connection; what was in flight on the last one is lost
  Time next_out{}, next_back{};  // messages of one connection arrive in order
  std::deque<proto::Envelope> held_out;  // on a cut path: delivered at the heal (TCP)
  std::deque<std::string> held_back;
  std::deque<std::string> inbox;  // replies arrived, not read yet
  uint64_t last_request = 0;
};

class SimLink final : public GangLink {
 public:
  SimLink(Simulation& sim, uint64_t id) : sim_(sim), id_(id) {}
  ~SimLink() override;
  bool send(proto::Envelope& envelope) override;
  std::optional<std::string> receive() override;
  bool handshakeRefused() override;
  bool alive() override;
  std::string describeState() override;
  void* socket() const override { return nullptr; }

 private:
  Simulation& sim_;
  uint64_t id_;
};

class SimWorld final : public GangWorld {
 public:
  SimWorld(Simulation& sim, int agent) : sim_(sim), agent_(agent) {}
  Clock::time_point now() override;
  std::unique_ptr<GangLink> connect(const proto::JobLaunch& launch,
                                    const proto::GangMember& member) override;
  bool refusesConnections(const std::string& endpoint) override;
  void admitKey(const std::string& public_key, const std::string& job_id) override;
  void revokeKey(const std::string& public_key) override;
  Result<std::vector<int>> startRanks(const proto::JobLaunch& launch) override;
  void stopRanks(const std::string& job_id) override;
  bool ranksActive(const std::string& job_id) override;
  std::vector<proto::RankProgress> progress(const std::string& job_id) override;
  void journal(proto::JournalRecord& record) override;
  void saveGang(const SavedGang& gang) override;
  void forgetGang(const std::string& job_id) override;

 private:
  Simulation& sim_;
  int agent_;
};

struct Agent {
  int index = 0;
  std::string name;
  bool alive = true;
  uint64_t incarnation = 0;  // a restart is a new process: events of the old one are dropped
  std::set<std::string> admitted;
  std::unique_ptr<SimWorld> world;
  std::unique_ptr<GangCoordinator> gang;
  std::optional<RankRun> ranks;  // the newest attempt launched here
  std::map<uint32_t, proto::RankState> ended_here;
  std::vector<proto::JournalRecord> journal;  // outlives the process, as the file does
  std::optional<SavedGang> saved;             // the ledger
  bool stop_heard = false;
  uint64_t wake_token = 0;
  std::optional<Time> wake_at;
};

struct Copy {  // one copy of an attempt: its ranks train together
  double progress = 0;
  Time last_progress{};
  std::set<int> started;  // agents whose ranks of it started
};

class Simulation {
 public:
  explicit Simulation(const Options& options);
  Report run();

  // For the links and worlds.
  Time now() const { return now_; }
  std::map<uint64_t, LinkState> links;
  std::vector<Agent> agents;
  void log(int agent, const std::string& line) { note(agents[agent].name + ": " + line); }
  uint64_t openLink(int from, int to, const std::string& key);
  void sendRequest(uint64_t link, proto::Envelope envelope);
  bool handshaking(const LinkState& link) const {
    return !link.connected && !link.refused && pathUp(link.from, link.to) &&
           pathUp(link.to, link.from) && agents[link.to].alive;
  }
  bool pathUp(int a, int b) const { return cut_[a][b] == 0; }
  int indexOf(const std::string& name) const;
  Result<std::vector<int>> startRanks(int agent, const proto::JobLaunch& launch);
  void stopRanks(int agent);
  std::vector<proto::RankProgress> progress(int agent) const;
  void journaled(int agent, const proto::JournalRecord& record);

 private:
  void at(Time when, std::function<void()> what) { queue_.push({when, seq_++, std::move(what)}); }
  void after(double s, std::function<void()> what) { at(now_ + seconds(s), std::move(what)); }
  void note(const std::string& line);
  void fail(const std::string& why) {
    if (result_.violation.empty()) result_.violation = why;
  }
  double delay();
  // After every call into an agent's coordinator: its timers, as the agent's loop runs them.
  void settle(int agent);
  void deliverRequest(uint64_t link, uint64_t epoch, int from, int to, proto::Envelope envelope);
  void deliverReply(uint64_t link, uint64_t epoch, std::string bytes);
  void tryHandshake(uint64_t link);
  void dropConnection(LinkState& link, double retry_after);
  void checkDrop(uint64_t link, uint64_t epoch);
  void cut(int a, int b);
  void heal(int a, int b);
  void crash(int agent, bool clean);
  void restart(int agent);
  void clientStop();
  void rankFails(int agent, const std::string& why);
  void scheduleExit(int agent, double after_s, proto::RankState state,
                    std::optional<proto::JobFailure> failure);
  void tick();
  bool quiet() const;
  void checkEnd();
  void drawSchedule();
  void launchJob();

  struct Event {
    Time when;
    uint64_t seq;
    std::function<void()> what;
    bool operator>(const Event& other) const {
      return when != other.when ? when > other.when : seq > other.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  uint64_t seq_ = 0;
  Time start_ = Time(std::chrono::hours(1000));
  Time now_ = start_;
  Options options_;
  std::mt19937_64 rng_;
  Report result_;
  std::vector<std::vector<int>> cut_;
  std::vector<std::vector<Time>> cut_since_;
  uint64_t next_link_ = 1;
  std::map<std::string, Copy> copies_;
  std::map<uint32_t, std::string> attempt_copies_;     // the one copy each attempt may have
  std::map<uint32_t, std::string> restart_journaled_;  // attempt: the agent that journaled it
  std::deque<std::string> recent_;
  proto::JobLaunch launch_;
  double train_seconds_ = 10;
  double collective_timeout_ = 30;
  double delay_ms_ = 1;
  double spike_chance_ = 0;
  double duplicate_chance_ = 0;
  Time faults_over_ = start_;
  bool stopped_ = false;
};

// ---- links and worlds ----

SimLink::~SimLink() { sim_.links.erase(id_); }

bool SimLink::send(proto::Envelope& envelope) {
  LinkState& link = sim_.links.at(id_);
  envelope.set_request_id(++link.last_request);  // as AgentConnection stamps each request
  if (!link.connected) return false;
  sim_.sendRequest(id_, envelope);
  return true;
}

std::optional<std::string> SimLink::receive() {
  LinkState& link = sim_.links.at(id_);
  if (link.inbox.empty()) return std::nullopt;
  std::string bytes = std::move(link.inbox.front());
  link.inbox.pop_front();
  return bytes;
}

bool SimLink::handshakeRefused() { return sim_.links.at(id_).refused; }

bool SimLink::alive() {
  const LinkState& link = sim_.links.at(id_);
  return link.connected || sim_.handshaking(link);
}

std::string SimLink::describeState() {
  const LinkState& link = sim_.links.at(id_);
  if (link.connected) return "up";
  if (link.refused) return "handshake refused";
  return sim_.handshaking(link) ? "in its handshake" : "dropped (no answer to heartbeats)";
}

Clock::time_point SimWorld::now() { return sim_.now(); }

std::unique_ptr<GangLink> SimWorld::connect(const proto::JobLaunch& launch,
                                            const proto::GangMember& member) {
  const int to = sim_.indexOf(member.agent());
  if (to < 0) return nullptr;
  return std::make_unique<SimLink>(sim_, sim_.openLink(agent_, to, launch.rendezvous_public_key()));
}

bool SimWorld::refusesConnections(const std::string& endpoint) {
  // tcp://aN:7000
  const int to = sim_.indexOf(endpoint.substr(6, endpoint.rfind(':') - 6));
  return to >= 0 && sim_.pathUp(agent_, to) && sim_.pathUp(to, agent_) && !sim_.agents[to].alive;
}

void SimWorld::admitKey(const std::string& public_key, const std::string&) {
  sim_.agents[agent_].admitted.insert(public_key);
}

void SimWorld::revokeKey(const std::string& public_key) {
  sim_.agents[agent_].admitted.erase(public_key);
}

Result<std::vector<int>> SimWorld::startRanks(const proto::JobLaunch& launch) {
  return sim_.startRanks(agent_, launch);
}

void SimWorld::stopRanks(const std::string&) { sim_.stopRanks(agent_); }

bool SimWorld::ranksActive(const std::string&) {
  const auto& ranks = sim_.agents[agent_].ranks;
  return ranks && ranks->active;
}

std::vector<proto::RankProgress> SimWorld::progress(const std::string&) {
  return sim_.progress(agent_);
}

void SimWorld::journal(proto::JournalRecord& record) { sim_.journaled(agent_, record); }

void SimWorld::saveGang(const SavedGang& gang) { sim_.agents[agent_].saved = gang; }

void SimWorld::forgetGang(const std::string&) { sim_.agents[agent_].saved.reset(); }

// ---- the simulation ----

Simulation::Simulation(const Options& options) : options_(options), rng_(options.seed) {
  std::uniform_int_distribution<int> size(3, 16);
  const int n = options.agents > 0 ? options.agents : size(rng_);
  result_.agents = n;
  cut_.assign(n, std::vector<int>(n, 0));
  cut_since_.assign(n, std::vector<Time>(n, start_));
  agents.resize(n);
  for (int i = 0; i < n; ++i) {
    agents[i].index = i;
    agents[i].name = "a" + std::to_string(i + 1);
    agents[i].world = std::make_unique<SimWorld>(*this, i);
  }
}

int Simulation::indexOf(const std::string& name) const {
  if (name.size() < 2 || name[0] != 'a') return -1;
  const int i = std::atoi(name.c_str() + 1) - 1;
  return i >= 0 && i < static_cast<int>(agents.size()) ? i : -1;
}

void Simulation::note(const std::string& line) {
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%9.3f ",
                std::chrono::duration<double>(now_ - start_).count());
  recent_.push_back(stamp + line);
  if (!options_.trace && recent_.size() > 160) recent_.pop_front();
}

double Simulation::delay() {
  std::uniform_real_distribution<double> jitter(0.2, 1.8);
  std::uniform_real_distribution<double> chance(0, 1);
  double ms = delay_ms_ * jitter(rng_);
  if (chance(rng_) < spike_chance_) ms += std::uniform_real_distribution<double>(100, 1500)(rng_);
  return ms / 1000;
}

void Simulation::settle(int agent) {
  Agent& a = agents[agent];
  if (!a.alive || !a.gang) return;
  Time next = std::max(a.gang->onTimer(now_), now_ + std::chrono::milliseconds(1));
  if (a.wake_at && *a.wake_at <= next) return;
  a.wake_at = next;
  const uint64_t token = ++a.wake_token;
  const uint64_t incarnation = a.incarnation;
  at(next, [this, agent, token, incarnation] {
    Agent& woken = agents[agent];
    if (woken.wake_token != token || woken.incarnation != incarnation) return;
    woken.wake_at.reset();
    settle(agent);
  });
}

uint64_t Simulation::openLink(int from, int to, const std::string& key) {
  const uint64_t id = next_link_++;
  LinkState& link = links[id];
  link.from = from;
  link.to = to;
  link.key = key;
  link.next_out = link.next_back = now_;
  after(delay() + 0.001, [this, id] { tryHandshake(id); });
  return id;
}

void Simulation::tryHandshake(uint64_t id) {
  auto it = links.find(id);
  if (it == links.end() || it->second.connected || it->second.refused) return;
  LinkState& link = it->second;
  if (!pathUp(link.from, link.to) || !pathUp(link.to, link.from)) {
    after(1, [this, id] { tryHandshake(id); });  // no answer to the SYN: libzmq tries again
    return;
  }
  if (!agents[link.to].alive) {
    after(0.1, [this, id] { tryHandshake(id); });  // refused: libzmq's reconnect interval
    return;
  }
  if (agents[link.to].admitted.count(link.key)) {
    link.connected = true;
    ++link.epoch;
  } else {
    link.refused = true;  // ZAP said no; libzmq never retries a refused handshake
  }
}

void Simulation::dropConnection(LinkState& link, double retry_after) {
  if (!link.connected) return;
  link.connected = false;
  ++link.epoch;
  link.held_out.clear();
  link.held_back.clear();
  for (auto& [id, state] : links) {
    if (&state == &link) {
      const uint64_t dropped = id;
      after(retry_after, [this, dropped] { tryHandshake(dropped); });
    }
  }
}

void Simulation::checkDrop(uint64_t id, uint64_t epoch) {
  auto it = links.find(id);
  if (it == links.end() || it->second.epoch != epoch || !it->second.connected) return;
  LinkState& link = it->second;
  const Time limit = now_ - seconds(kDropAfter) + std::chrono::microseconds(1);
  const bool out_cut = !pathUp(link.from, link.to) && cut_since_[link.from][link.to] <= limit;
  const bool back_cut = !pathUp(link.to, link.from) && cut_since_[link.to][link.from] <= limit;
  if (out_cut || back_cut) dropConnection(link, 1);
}

void Simulation::sendRequest(uint64_t id, proto::Envelope envelope) {
  LinkState& link = links.at(id);
  const Time when = std::max(now_ + seconds(delay()), link.next_out);
  link.next_out = when;
  at(when, [this, id, epoch = link.epoch, from = link.from, to = link.to,
            envelope = std::move(envelope)]() mutable {
    deliverRequest(id, epoch, from, to, std::move(envelope));
  });
}

void Simulation::deliverRequest(uint64_t id, uint64_t epoch, int from, int to,
                                proto::Envelope envelope) {
  auto it = links.find(id);
  // A closed socket's last messages are on the wire already (a clean shutdown's news).
  if (it != links.end()) {
    LinkState& link = it->second;
    if (link.epoch != epoch) return;
    if (!pathUp(from, to) || !link.held_out.empty()) {
      link.held_out.push_back(std::move(envelope));
      return;
    }
  } else if (!pathUp(from, to)) {
    return;
  }
  Agent& peer = agents[to];
  if (!peer.alive || !peer.gang) {  // its host answers with a reset: the connection drops
    if (it != links.end()) dropConnection(it->second, 0.1);
    return;
  }
  ++result_.messages;
  proto::Envelope reply = peer.gang->handle(envelope);
  if (std::uniform_real_distribution<double>(0, 1)(rng_) < duplicate_chance_) {
    (void)peer.gang->handle(envelope);  // delivered twice: its second answer is lost
  }
  settle(to);
  it = links.find(id);
  if (it == links.end() || it->second.epoch != epoch) return;
  LinkState& link = it->second;
  const Time when = std::max(now_ + seconds(delay()), link.next_back);
  link.next_back = when;
  at(when, [this, id, epoch, bytes = protocol::encode(reply)]() mutable {
    deliverReply(id, epoch, std::move(bytes));
  });
}

void Simulation::deliverReply(uint64_t id, uint64_t epoch, std::string bytes) {
  auto it = links.find(id);
  if (it == links.end() || it->second.epoch != epoch) return;
  LinkState& link = it->second;
  if (!pathUp(link.to, link.from) || !link.held_back.empty()) {
    link.held_back.push_back(std::move(bytes));
    return;
  }
  link.inbox.push_back(std::move(bytes));
  const int from = link.from;
  if (!agents[from].gang) return;
  agents[from].gang->onReadable();
  settle(from);
}

void Simulation::cut(int a, int b) {
  if (cut_[a][b]++ > 0) return;
  cut_since_[a][b] = now_;
  for (auto& [id, link] : links) {
    if ((link.from == a && link.to == b) || (link.from == b && link.to == a)) {
      after(kDropAfter, [this, id = id, epoch = link.epoch] { checkDrop(id, epoch); });
    }
  }
}

void Simulation::heal(int a, int b) {
  if (--cut_[a][b] > 0) return;
  // What TCP held on the path arrives now, in order.
  for (auto& [id, link] : links) {
    if (link.from == a && link.to == b) {
      std::deque<proto::Envelope> held;
      held.swap(link.held_out);
      for (auto& envelope : held) sendRequest(id, std::move(envelope));
    }
    if (link.from == b && link.to == a) {
      std::deque<std::string> held;
      held.swap(link.held_back);
      for (auto& bytes : held) {
        const Time when = std::max(now_ + seconds(delay()), link.next_back);
        link.next_back = when;
        at(when, [this, id = id, epoch = link.epoch, bytes = std::move(bytes)]() mutable {
          deliverReply(id, epoch, std::move(bytes));
        });
      }
    }
  }
}

void Simulation::crash(int agent, bool clean) {
  Agent& a = agents[agent];
  if (!a.alive) return;
  note(a.name + (clean ? " shuts down (SIGTERM)" : " is killed (SIGKILL)"));
  if (clean && a.gang) a.gang->shutDown();
  if (a.ranks && a.ranks->active) {
    a.ranks->active = false;  // gone with the agent; a clean stop journals them stopped
    if (clean) a.ended_here[a.ranks->attempt] = proto::STOPPED;
  }
  a.alive = false;
  ++a.incarnation;
  a.wake_at.reset();
  a.gang.reset();  // closes its links
  a.admitted.clear();
  for (auto& [id, link] : links) {
    if (link.to == agent && pathUp(link.from, agent)) dropConnection(link, 0.1);
  }
}

void Simulation::restart(int agent) {
  Agent& a = agents[agent];
  if (a.alive) return;
  note(a.name + " starts again");
  a.alive = true;
  EarlierRun earlier;
  if (a.ranks && !a.ended_here.count(a.ranks->attempt)) {
    a.ended_here[a.ranks->attempt] = proto::FAILED;  // interrupted: journaled failed at start
    earlier.interrupted.insert({kJob, a.ranks->attempt});
  }
  for (const auto& [attempt, state] : a.ended_here) earlier.ended_here[{kJob, attempt}] = state;
  for (const auto& record : a.journal) {
    if (record.has_job_outcome()) {
      earlier.outcomes.push_back({kJob, record.attempt(), record.job_outcome().state()});
    }
  }
  a.gang = std::make_unique<GangCoordinator>(GangCoordinator::Parts{
      a.name, a.world.get(), [this, agent](const std::string& line) { log(agent, line); }});
  std::vector<SavedGang> saved;
  if (a.saved) saved.push_back(*a.saved);
  a.gang->resume(saved, earlier);
  settle(agent);
}

void Simulation::clientStop() {
  note("a client stops the job on every agent that is up");
  stopped_ = true;
  for (Agent& a : agents) {
    if (!a.alive) continue;
    a.stop_heard = true;
    a.gang->stopRequested(kJob);
    stopRanks(a.index);
    settle(a.index);
  }
}

Result<std::vector<int>> Simulation::startRanks(int agent, const proto::JobLaunch& launch) {
  Agent& a = agents[agent];
  if (a.ranks && a.ranks->active) {
    return Status(ErrorCode::kAlreadyExists, "job '" + kJob + "' is already running");
  }
  RankRun run;
  run.attempt = launch.attempt();
  run.copy = std::to_string(run.attempt) + ":";
  for (int m = 0; m < launch.gang_size(); ++m) {
    run.copy += (m ? "," : "") + launch.gang(m).agent();
    run.members.push_back(indexOf(launch.gang(m).agent()));
  }
  if (a.stop_heard) {
    fail(a.name + " started attempt " + std::to_string(run.attempt) +
         " after a client's stop reached it");
  }
  auto [known, fresh] = attempt_copies_.emplace(run.attempt, run.copy);
  if (!fresh && known->second != run.copy) {
    fail("two copies of attempt " + std::to_string(run.attempt) + ": " + known->second + " and " +
         run.copy + " (on " + a.name + ")");
  }
  run.started = run.last_step = now_;
  copies_[run.copy].started.insert(agent);
  if (copies_[run.copy].last_progress == Time{}) copies_[run.copy].last_progress = now_;
  note(a.name + " starts its rank of attempt " + run.copy);
  result_.last_attempt = std::max(result_.last_attempt, run.attempt);
  a.ranks = run;
  return std::vector<int>{1000 + agent};
}

void Simulation::stopRanks(int agent) {
  std::uniform_real_distribution<double> grace(0.02, 1.0);
  scheduleExit(agent, grace(rng_), proto::STOPPED, std::nullopt);
}

std::vector<proto::RankProgress> Simulation::progress(int agent) const {
  const auto& ranks = agents[agent].ranks;
  if (!ranks || !ranks->active) return {};
  proto::RankProgress rank;
  rank.set_rank(static_cast<int>(std::find(ranks->members.begin(), ranks->members.end(), agent) -
                                 ranks->members.begin()));
  rank.set_step(ranks->steps - 1);
  rank.set_idle_seconds(std::chrono::duration<double>(now_ - ranks->last_step).count());
  rank.set_slowest_step_seconds(ranks->steps > 1 ? kTick : 0);
  rank.set_activity("computing");
  return {rank};
}

void Simulation::journaled(int agent, const proto::JournalRecord& record) {
  Agent& a = agents[agent];
  a.journal.push_back(record);
  if (record.has_job_restart()) {
    const uint32_t next = record.job_restart().next_attempt();
    auto [known, fresh] = restart_journaled_.emplace(next, a.name);
    if (!fresh) {
      fail("attempt " + std::to_string(next) + " journaled by " + known->second + " and by " +
           a.name);
    }
  }
  if (record.has_job_outcome()) {
    note(a.name + " journals the outcome: " + stateName(record.job_outcome().state()) + " (" +
         record.job_outcome().cause() + ")");
  }
}

void Simulation::scheduleExit(int agent, double after_s, proto::RankState state,
                              std::optional<proto::JobFailure> failure) {
  Agent& a = agents[agent];
  if (!a.alive || !a.ranks || !a.ranks->active || a.ranks->exiting) return;
  a.ranks->exiting = true;
  after(after_s, [this, agent, incarnation = a.incarnation, copy = a.ranks->copy, state,
                  failure = std::move(failure)] {
    Agent& exited = agents[agent];
    if (exited.incarnation != incarnation || !exited.ranks || exited.ranks->copy != copy ||
        !exited.ranks->active) {
      return;
    }
    exited.ranks->active = false;
    exited.ended_here[exited.ranks->attempt] = state;
    AttemptEvent event;
    event.job_id = kJob;
    event.attempt = exited.ranks->attempt;
    event.failure = failure;
    event.over = state;
    exited.gang->onSupervisorEvents({event});
    settle(agent);
  });
}

void Simulation::rankFails(int agent, const std::string& why) {
  const Agent& a = agents[agent];
  if (!a.ranks || !a.ranks->active || a.ranks->exiting) return;
  proto::JobFailure failure;
  failure.set_kind("exited");
  failure.set_agent(a.name);
  failure.set_rank(progress(agent).empty() ? 0 : progress(agent)[0].rank());
  failure.set_step(a.ranks->steps);
  failure.set_cause("rank " + std::to_string(failure.rank()) + " on " + a.name +
                    " exited with code 1 (" + why + ")");
  std::uniform_real_distribution<double> soon(0.01, 0.5);
  scheduleExit(agent, soon(rng_), proto::FAILED, failure);
}

// The ranks' ground truth: a copy trains while each of its agents runs its rank of it and they
// all reach each other; a rank whose peer's rank ended sees its connection close and fails, one
// whose peers are unreachable times out in its collective.
void Simulation::tick() {
  std::map<std::string, std::vector<int>> running;  // copy: agents running its rank
  for (const Agent& a : agents) {
    if (a.alive && a.ranks && a.ranks->active && !a.ranks->exiting) {
      running[a.ranks->copy].push_back(a.index);
    }
  }
  std::vector<std::string> training;
  for (auto& [name, runs] : running) {
    Copy& copy = copies_[name];
    const std::vector<int>& members = agents[runs[0]].ranks->members;
    bool linked = runs.size() == members.size();
    for (size_t i = 0; linked && i < members.size(); ++i) {
      for (size_t j = 0; linked && j < members.size(); ++j) {
        linked = i == j || pathUp(members[i], members[j]);
      }
    }
    if (linked) {
      training.push_back(name);
      copy.progress += kTick;
      copy.last_progress = now_;
      for (int agent : runs) {
        ++agents[agent].ranks->steps;
        agents[agent].ranks->last_step = now_;
      }
      if (copy.progress >= train_seconds_) {
        std::uniform_real_distribution<double> jitter(0, 0.2);
        for (int agent : runs) scheduleExit(agent, jitter(rng_), proto::SUCCEEDED, std::nullopt);
      }
      continue;
    }
    for (int agent : runs) {
      for (int member : members) {
        const bool gone =
            copy.started.count(member) && !std::count(runs.begin(), runs.end(), member);
        if (gone && pathUp(agent, member) && pathUp(member, agent)) {
          rankFails(agent, "gloo: connection closed by peer " + agents[member].name);
          break;
        }
      }
      if (now_ - copy.last_progress >= seconds(collective_timeout_)) {
        rankFails(agent, "gloo: collective timed out");
      }
    }
  }
  if (training.size() > 1) {
    std::string copies;
    for (const auto& name : training) copies += (copies.empty() ? "" : " and ") + name;
    fail("two copies of the job train at once: " + copies);
  }
  after(kTick, [this] { tick(); });
}

bool Simulation::quiet() const {
  for (const Agent& a : agents) {
    if (a.alive && ((a.ranks && a.ranks->active) || !a.gang->idle())) return false;
  }
  return true;
}

void Simulation::checkEnd() {
  for (const Agent& a : agents) {
    if (!a.alive) continue;
    if (a.ranks && a.ranks->active) fail(a.name + " still runs its rank of " + a.ranks->copy);
    if (!a.gang->idle()) fail(a.name + " still holds the job's gang at the end");
  }
  // Every outcome decided with a majority is the same (a side without one says so).
  std::optional<proto::RankState> decided;
  std::string by;
  for (const Agent& a : agents) {
    for (const auto& record : a.journal) {
      if (!record.has_job_outcome()) continue;
      const proto::JobOutcome& outcome = record.job_outcome();
      if (outcome.without_majority()) continue;
      if (decided && *decided != outcome.state()) {
        fail("the job ended twice: " + stateName(*decided) + " (" + by + ") and " +
             stateName(outcome.state()) + " (" + a.name + ": " + outcome.cause() + ")");
      }
      decided = outcome.state();
      by = a.name;
    }
  }
  result_.outcome = decided ? stateName(*decided) : "none";
}

void Simulation::launchJob() {
  auto keys = security::generateKeyPair();
  launch_.set_job_id(kJob);
  launch_.set_attempt(1);
  launch_.set_launcher(proto::NATIVE);
  launch_.set_rendezvous_public_key(keys->public_key);
  launch_.set_rendezvous_secret_key(keys->secret_key);
  for (const Agent& a : agents) {
    proto::GangMember* member = launch_.add_gang();
    member->set_agent(a.name);
    member->set_endpoint("tcp://" + a.name + ":7000");
    member->set_host_address(a.name);
    member->set_ranks(1);
  }
  launch_.set_world_size(static_cast<int>(agents.size()));
  std::vector<proto::JobLaunch> shares;
  for (const Agent& a : agents) {
    proto::GangRestart all;
    for (const auto& member : launch_.gang()) *all.add_members() = member;
    shares.push_back(*launchForAttempt(launch_, all, 1, a.name));
  }
  for (Agent& a : agents) {
    a.gang = std::make_unique<GangCoordinator>(GangCoordinator::Parts{
        a.name, a.world.get(), [this, i = a.index](const std::string& line) { log(i, line); }});
    a.gang->expect(shares[a.index]);
  }
  for (Agent& a : agents) {
    a.gang->connectEarly(shares[a.index]);
    (void)startRanks(a.index, shares[a.index]);
    a.gang->join(shares[a.index]);
    settle(a.index);
  }
}

void Simulation::drawSchedule() {
  auto& rng = rng_;
  const int n = static_cast<int>(agents.size());
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<>(lo, hi)(rng);
  };
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  proto::RestartPolicy* policy = launch_.mutable_restart();
  const int restarts[] = {0, 1, 2, 3, 5};
  policy->set_max_restarts(restarts[pick(0, 4)]);
  const double rejoin[] = {3, 10, 20, 60};
  policy->set_rejoin_timeout_seconds(rejoin[pick(0, 3)]);
  policy->set_min_nodes(pick(0, 2) == 0 ? 0 : pick(1, n));
  const double backoff[] = {0, 0.5, 2};
  policy->set_backoff_seconds(backoff[pick(0, 2)]);
  policy->set_exclude_failed_hosts(pick(0, 1) == 1);
  train_seconds_ = uniform(5, 40);
  collective_timeout_ = uniform(20, 120);
  delay_ms_ = uniform(0.05, 5);
  spike_chance_ = pick(0, 1) ? 0.01 : 0;
  duplicate_chance_ = pick(0, 1) ? 0.01 : 0;
  char line[256];
  std::snprintf(line, sizeof line,
                "%d agents; max_restarts %u, min_nodes %d, rejoin %g s, backoff %g s%s; trains "
                "%.1f s; collectives time out after %.0f s; messages %.2f ms%s%s\n",
                n, policy->max_restarts(), policy->min_nodes(), policy->rejoin_timeout_seconds(),
                policy->backoff_seconds(), policy->exclude_failed_hosts() ? ", excludes" : "",
                train_seconds_, collective_timeout_, delay_ms_,
                spike_chance_ > 0 ? ", 1% of them 0.1-1.5 s late" : "",
                duplicate_chance_ > 0 ? ", 1% delivered twice" : "");
  result_.schedule += line;

  auto describe = [&](double start, const std::string& what) {
    std::snprintf(line, sizeof line, "at %6.2f s: %s\n", start, what.c_str());
    result_.schedule += line;
  };
  auto cutFor = [&](double start, double length, std::vector<std::pair<int, int>> paths,
                    const std::string& what) {
    describe(start, what + " for " + tenths(length) + " s");
    at(start_ + seconds(start), [this, paths, what] {
      note("network: " + what);
      for (auto [a, b] : paths) cut(a, b);
    });
    at(start_ + seconds(start + length), [this, paths, what] {
      note("network heals: " + what);
      for (auto [a, b] : paths) heal(a, b);
    });
    faults_over_ = std::max(faults_over_, start_ + seconds(start + length));
  };
  auto between = [&](const std::vector<int>& side) {
    std::vector<std::pair<int, int>> paths;
    for (int a = 0; a < n; ++a) {
      for (int b = 0; b < n; ++b) {
        const bool in_a = std::count(side.begin(), side.end(), a) > 0;
        const bool in_b = std::count(side.begin(), side.end(), b) > 0;
        if (in_a != in_b) paths.emplace_back(a, b);
      }
    }
    return paths;
  };
  auto names = [&](const std::vector<int>& side) {
    std::string text;
    for (int i : side) text += (text.empty() ? "" : ",") + agents[i].name;
    return text;
  };
  const int faults = pick(0, 5);
  for (int f = 0; f < faults; ++f) {
    const double start = uniform(0.5, 60);
    const double length = uniform(0.5, 90);
    const int kind = pick(0, 99);
    const int a = pick(0, n - 1);
    int b = pick(0, n - 2);
    if (b >= a) ++b;
    if (kind < 25) {  // a split into two sides
      std::vector<int> all(n);
      for (int i = 0; i < n; ++i) all[i] = i;
      std::shuffle(all.begin(), all.end(), rng);
      const int size = (kind < 8 && n % 2 == 0) ? n / 2 : pick(1, n - 1);
      std::vector<int> side(all.begin(), all.begin() + size);
      std::sort(side.begin(), side.end());
      cutFor(start, length, between(side), "split {" + names(side) + "} from the rest");
    } else if (kind < 40) {  // one agent cut off
      cutFor(start, length, between({a}), agents[a].name + " cut off");
    } else if (kind < 50) {  // one-way loss
      std::vector<std::pair<int, int>> paths;
      const bool all_out = pick(0, 1);
      for (int other = 0; other < n; ++other) {
        if (other != a && (all_out || other == b)) paths.emplace_back(a, other);
      }
      cutFor(start, length, paths,
             "one-way loss from " + agents[a].name + " to " + (all_out ? "all" : agents[b].name));
    } else if (kind < 60) {  // two agents cannot reach each other, both reach the rest
      cutFor(start, length, {{a, b}, {b, a}},
             "cut between " + agents[a].name + " and " + agents[b].name + " only");
    } else if (kind < 66) {  // a flapping link
      double t = start;
      const double period = uniform(0.5, 5);
      const auto paths =
          pick(0, 1) ? between({a}) : std::vector<std::pair<int, int>>{{a, b}, {b, a}};
      while (t < start + length) {
        cutFor(t, period, paths, "flap of " + agents[a].name);
        t += 2 * period;
      }
    } else if (kind < 78) {  // kill -9, back later or never
      const bool back = pick(0, 3) > 0;
      const double down = uniform(0.5, 60);
      describe(start,
               agents[a].name + " killed" + (back ? ", back after " + tenths(down) + " s" : ""));
      at(start_ + seconds(start), [this, a] { crash(a, false); });
      if (back) at(start_ + seconds(start + down), [this, a] { restart(a); });
      faults_over_ = std::max(faults_over_, start_ + seconds(start + (back ? down : 0)));
    } else if (kind < 84) {  // a clean shutdown and restart
      const double down = uniform(0.5, 30);
      describe(start, agents[a].name + " shut down, back after " + tenths(down) + " s");
      at(start_ + seconds(start), [this, a] { crash(a, true); });
      at(start_ + seconds(start + down), [this, a] { restart(a); });
      faults_over_ = std::max(faults_over_, start_ + seconds(start + down));
    } else if (kind < 96) {
      describe(start, "the rank on " + agents[a].name + " fails");
      at(start_ + seconds(start), [this, a] {
        note("the rank on " + agents[a].name + " fails");
        rankFails(a, "a fault of its own");
      });
      faults_over_ = std::max(faults_over_, start_ + seconds(start));
    } else {
      describe(start, "a client stops the job");
      at(start_ + seconds(start), [this] { clientStop(); });
      faults_over_ = std::max(faults_over_, start_ + seconds(start));
    }
  }
}

Report Simulation::run() {
  drawSchedule();
  launchJob();
  tick();
  const Time cap = faults_over_ + seconds(kSettleCap);
  while (!queue_.empty() && result_.violation.empty()) {
    Event event = queue_.top();
    queue_.pop();
    now_ = event.when;
    ++result_.events;
    event.what();
    if (now_ > faults_over_ && quiet()) break;
    if (now_ > cap) break;
  }
  result_.virtual_seconds = std::chrono::duration<double>(now_ - start_).count();
  if (result_.violation.empty()) checkEnd();
  if (!result_.violation.empty() || options_.trace) {
    for (const auto& line : recent_) result_.trace += line + "\n";
  }
  return result_;
}

}  // namespace

Report run(const Options& options) {
  Simulation simulation(options);
  return simulation.run();
}

}  // namespace ringmaster::agent::sim

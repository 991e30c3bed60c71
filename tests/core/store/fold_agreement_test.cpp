// One fold: the history (store::Writer) and a live view (job::JobModel) fed the same journals agree
// on the job's state after every batch, whatever order the agents' journals arrive in. The journals
// are generated: multi-attempt jobs on 1-3 agents, failures with and without restarts left, a
// client's restart of a job that was over, a hang raised and cleared, agents lost, elastic shrink,
// and records of an old attempt arriving late from another agent.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ringmaster/job/job_model.h"
#include "ringmaster/store/store.h"

namespace ringmaster::store {
namespace {

namespace fs = std::filesystem;
using job::JobPhase;

constexpr char kJob[] = "j1";

// The journals of one job's agents, written as the agents write them: each agent's in its own
// order, seqs dense from 1, times from one clock.
class Journals {
 public:
  proto::JournalRecord& add(const std::string& agent, uint32_t attempt, const std::string& source) {
    proto::JournalRecord& r = by_agent[agent].emplace_back();
    r.set_seq(by_agent[agent].size());
    r.set_time(time_ += 0.25);
    r.set_job(kJob);
    r.set_attempt(attempt);
    r.set_source(source);
    return r;
  }
  std::map<std::string, std::vector<proto::JournalRecord>> by_agent;

 private:
  double time_ = 1000;
};

struct Member {
  std::string agent;
  std::vector<int> ranks;
};

// A job's life as its agents journal it, chosen by `rng`. The first member leads.
Journals generateJob(std::mt19937& rng) {
  auto chance = [&](double p) { return std::uniform_real_distribution<>(0, 1)(rng) < p; };
  auto pick = [&](int n) { return std::uniform_int_distribution<>(0, n - 1)(rng); };
  Journals j;
  const uint32_t max_restarts = pick(3);
  std::vector<Member> members;
  int next_rank = 0;
  for (int a = 0, agents = 1 + pick(3); a < agents; ++a) {
    Member m{"a" + std::to_string(a + 1), {}};
    for (int r = 0, n = 1 + pick(2); r < n; ++r) m.ranks.push_back(next_rank++);
    members.push_back(m);
  }
  uint32_t left = max_restarts;
  for (uint32_t attempt = 1; attempt <= 6; ++attempt) {
    const std::string leader = members.front().agent;
    int world = 0;
    for (const Member& m : members) world += static_cast<int>(m.ranks.size());
    for (const Member& m : members) {
      auto& a = *j.add(m.agent, attempt, "agent:" + m.agent).mutable_job_accepted();
      a.set_name("train");
      a.set_world_size(world);
      a.set_max_restarts(max_restarts);
      for (int r : m.ranks) a.add_ranks()->set_rank(r);
    }
    for (const Member& m : members) {
      for (int r : m.ranks) {
        auto& s = *j.add(m.agent, attempt, "rank:" + std::to_string(r)).mutable_rank_started();
        s.set_rank(r);
        s.set_pid(100 + r);
      }
    }
    if (chance(0.3)) {
      auto& h = *j.add(leader, attempt, "agent:" + leader).mutable_hang_suspicion();
      h.set_stage("suspected");
      h.set_rank(members.back().ranks.front());
      h.set_agent(members.back().agent);
      h.set_cause("rank may be hung");
      if (chance(0.5))
        j.add(leader, attempt, "agent:" + leader).mutable_hang_suspicion()->set_stage("cleared");
    }
    auto exitAll = [&](const std::set<std::string>& skip, int failed, proto::RankState others) {
      for (const Member& m : members) {
        if (skip.count(m.agent)) continue;
        for (int r : m.ranks) {
          if (r == failed) continue;
          auto& e = *j.add(m.agent, attempt, "rank:" + std::to_string(r)).mutable_rank_exited();
          e.set_rank(r);
          e.set_state(others);
        }
        j.add(m.agent, attempt, "agent:" + m.agent).mutable_job_finished()->set_state(others);
      }
    };
    auto decide = [&](proto::JobDecision::Next next, uint32_t restarts_left) {
      auto& d = *j.add(leader, attempt, "agent:" + leader).mutable_job_decision();
      d.set_next(next);
      d.set_restarts_left(restarts_left);
    };
    auto end = [&](proto::RankState state) {
      j.add(leader, attempt, "agent:" + leader).mutable_job_outcome()->set_state(state);
    };
    const int ending = pick(10);
    if (ending < 3) {  // every rank succeeds
      exitAll({}, -1, proto::SUCCEEDED);
      end(proto::SUCCEEDED);
    } else if (ending == 3) {  // a client stops it
      decide(proto::JobDecision::STOP, 0);
      exitAll({}, -1, proto::STOPPED);
      end(proto::STOPPED);
    } else {  // a rank fails, or (with several agents) an agent is lost
      const bool agent_lost = ending >= 8 && members.size() > 1;
      std::set<std::string> lost;
      int failed = -1;
      if (agent_lost) {
        lost.insert(members.back().agent);
      } else {
        const Member& m = members[pick(static_cast<int>(members.size()))];
        failed = m.ranks[pick(static_cast<int>(m.ranks.size()))];
        auto& e = *j.add(m.agent, attempt, "rank:" + std::to_string(failed)).mutable_rank_exited();
        e.set_rank(failed);
        e.set_state(proto::FAILED);
        e.set_exit_code(1);
      }
      decide(left > 0 ? proto::JobDecision::RESTART : proto::JobDecision::FAIL,
             left > 0 ? left - 1 : 0);
      exitAll(lost, failed, proto::STOPPED);
      auto& f = *j.add(leader, attempt, "agent:" + leader).mutable_job_failure();
      f.set_kind(agent_lost ? "agent_lost" : "exited");
      f.set_cause("attempt failed");
      if (left > 0) {
        --left;
        if (agent_lost || (members.size() > 1 && chance(0.3))) members.pop_back();  // shrink
        auto& restart = *j.add(leader, attempt, "agent:" + leader).mutable_job_restart();
        restart.set_next_attempt(attempt + 1);
        restart.set_restarts_left(left);
        continue;
      }
      end(proto::FAILED);
    }
    // Over; a client may restart it (the policy's restarts count anew), as may Slurm's requeue.
    if (!chance(0.3)) break;
    left = max_restarts;
  }
  return j;
}

class FoldAgreementTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rm-fold-" + std::to_string(::getpid()) + "-" + std::to_string(GetParam()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// The model read back from the history says what the live model says.
void expectAgreement(Writer& store, const job::JobModel& live, const std::string& where) {
  auto row = store.job(kJob);
  if (!row.isOk()) {
    ASSERT_EQ(row.status().code(), ErrorCode::kNotFound) << where;
    EXPECT_EQ(live.attempt(), 0u) << where;
    return;
  }
  auto ranks = store.ranks(kJob);
  ASSERT_TRUE(ranks.isOk()) << where;
  job::JobModel stored(kJob);
  stored.applyStored(storedJobOf(*row, *ranks));
  EXPECT_EQ(row->state, job::phaseName(live.phase())) << where;
  EXPECT_EQ(stored.phase(), live.phase()) << where;
  EXPECT_EQ(row->attempt, live.attempt()) << where;
  EXPECT_EQ(row->restarts_left, static_cast<int>(live.restartsLeft())) << where;
  EXPECT_EQ(stored.finished(), live.finished()) << where;
  EXPECT_DOUBLE_EQ(row->finished_at, live.endTime()) << where;
  EXPECT_EQ(stored.hang().has_value(), live.hang().has_value()) << where;
}

TEST_P(FoldAgreementTest, HistoryAndLiveModelAgreeAfterEveryBatchInAnyArrivalOrder) {
  std::mt19937 rng(GetParam());
  const Journals journals = generateJob(rng);
  auto store = Writer::open((dir_ / "history.db").string());
  ASSERT_TRUE(store.isOk()) << store.status().toString();
  job::JobModel live(kJob);
  std::map<std::string, size_t> cursor;
  // What has arrived of the leaders' decisions: the job is failed only when one said so.
  std::set<uint32_t> fail_said;
  int batch_number = 0;
  while (true) {
    std::vector<std::string> pending;
    for (const auto& [agent, records] : journals.by_agent) {
      if (cursor[agent] < records.size()) pending.push_back(agent);
    }
    if (pending.empty()) break;
    const std::string agent = pending[rng() % pending.size()];
    const auto& records = journals.by_agent.at(agent);
    const size_t from = cursor[agent];
    const size_t to = std::min(records.size(), from + 1 + rng() % 3);
    std::vector<proto::JournalRecord> batch(records.begin() + from, records.begin() + to);
    for (const auto& r : batch) {
      live.apply(agent, r);
      if ((r.has_job_decision() && r.job_decision().next() == proto::JobDecision::FAIL) ||
          (r.has_job_outcome() && r.job_outcome().state() == proto::FAILED)) {
        fail_said.insert(r.attempt());
      }
    }
    ASSERT_TRUE(store->get()->applyJournal(agent, "journal-" + agent, batch, to + 1).isOk());
    // Now and then a batch arrives twice (a client that crashed before its cursor moved).
    if (rng() % 5 == 0) {
      ASSERT_TRUE(store->get()->applyJournal(agent, "journal-" + agent, batch, to + 1).isOk());
    }
    cursor[agent] = to;
    const std::string where = "seed " + std::to_string(GetParam()) + ", batch " +
                              std::to_string(++batch_number) + " (" + agent + " records " +
                              std::to_string(from + 1) + ".." + std::to_string(to) + ")";
    expectAgreement(**store, live, where);
    if (live.phase() == JobPhase::kFailed) {
      EXPECT_TRUE(fail_said.count(live.attempt())) << where << ": failed, but no leader said so";
    }
    if (HasFailure()) return;
  }
  // Every journal read: over, or (generated jobs end after six attempts) about to restart.
  EXPECT_TRUE(live.decided() || live.phase() == JobPhase::kRestarting);
}

INSTANTIATE_TEST_SUITE_P(Seeds, FoldAgreementTest, ::testing::Range(1, 151));

}  // namespace
}  // namespace ringmaster::store

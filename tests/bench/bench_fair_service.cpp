// Fair service between keys on one agent: 32 clients of one key run short `submit --follow` jobs
// (50 log lines each) while 16 connections of the same key ask for 16 MB log reads and read
// nothing, and 8 more read that 20 MB log over and over, 16 MiB a request; meanwhile an
// unrelated key (role user) asks every 100 ms for the agent's inventory (a cheap request) and for
// 1 MiB of its own job's log (a read, queued like the busy key's). The peer is the same requests
// on the idle agent, measured first in the same run.
//
// RESULT: the unrelated key's p50/p99/max under load against idle, for each kind of request, and
// what the busy key got: follows run and complete (every line printed), submits refused,
// history rows lost or doubled.
//
// bench_fair_service [SECONDS [follows|floods|issue]]   (default 30 s, every load; the issue
// measured 60 s). One load alone says which one a delay comes from; `issue` is issue 34's load
// (the follows and the unread floods, without the busy readers).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "ringmaster/client/agent_connection.h"
#include "ringmaster/security/keys.h"
#include "ringmaster/store/reader.h"

using namespace ringmaster;
using namespace ringmaster::testing;

namespace {

constexpr int kFollowers = 32;
constexpr int kFloodConnections = 16;
constexpr int kLinesPerJob = 50;
constexpr int kBusyReaders = 8;
constexpr uint32_t kBusyReadBytes = 16u << 20;

struct Latencies {
  std::vector<double> ms;
  int failed = 0;
  double at(double q) const {
    if (ms.empty()) return 0;
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()))];
  }
};

// Times one call into `into`.
void timeCall(client::AgentConnection& connection, const proto::Envelope& request,
              Latencies* into) {
  const auto asked = std::chrono::steady_clock::now();
  const bool ok = connection.call(request, 10000).isOk();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - asked).count();
  if (ok) {
    into->ms.push_back(ms);
  } else {
    ++into->failed;
  }
}

// The unrelated key's inventory and a 1 MiB read of its own job's log, every 100 ms until `stop`.
std::pair<Latencies, Latencies> pollOther(client::AgentConnection& connection,
                                          const std::string& own_job,
                                          const std::atomic<bool>& stop) {
  proto::Envelope inventory;
  inventory.mutable_inventory_request();
  proto::Envelope read;
  read.mutable_read_log()->set_job_id(own_job);
  read.mutable_read_log()->set_max_bytes(1u << 20);
  Latencies inventories, reads;
  while (!stop) {
    timeCall(connection, inventory, &inventories);
    timeCall(connection, read, &reads);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return {inventories, reads};
}

// The busy key reading `job`'s log from the start, 16 MiB a request, over and over until `stop`.
void readOverAndOver(client::AgentConnection& connection, const std::string& job,
                     const std::atomic<bool>& stop) {
  proto::Envelope read;
  read.mutable_read_log()->set_job_id(job);
  read.mutable_read_log()->set_max_bytes(kBusyReadBytes);
  uint64_t offset = 0;
  while (!stop) {
    read.mutable_read_log()->set_offset(offset);
    auto chunk = connection.call(read, 10000);
    if (!chunk.isOk() || !chunk->has_log_chunk() || chunk->log_chunk().data().empty()) {
      offset = 0;
      continue;
    }
    offset = chunk->log_chunk().offset() + chunk->log_chunk().data().size();
  }
}

int countLines(const std::string& text) {
  int lines = 0;
  for (size_t at = text.find("fair-line "); at != std::string::npos;
       at = text.find("fair-line ", at + 1)) {
    ++lines;
  }
  return lines;
}

}  // namespace

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::max(5, std::atoi(argv[1])) : 30;
  const std::string only = argc > 2 ? argv[2] : "";
  const int followers_n = only == "floods" ? 0 : kFollowers;
  const int flood_n = only == "follows" ? 0 : kFloodConnections;
  const int busy_n = only == "follows" || only == "issue" ? 0 : kBusyReaders;
  Cluster cluster;
  std::string error;
  if (!cluster.addAgent("a1", kFollowers + 8, &error)) {
    std::fprintf(stderr, "agent: %s\n", error.c_str());
    return 1;
  }
  AgentProcess& agent = cluster.agent("a1");

  // The unrelated key: another client, authorized with role user.
  std::map<std::string, std::string> other_env = cluster.env();
  other_env["RINGMASTER_CONFIG_DIR"] = cluster.dir() + "/other-config";
  const std::string other_key =
      runCommand({binPath("ringmasterctl"), "keys"}, other_env).firstLine();
  if (runCommand({binPath("ringmaster-agent"), "authorize", "--role", "user", "--state-dir",
                  agent.stateDir(), "--", other_key})
          .exit_code != 0) {
    std::fprintf(stderr, "could not authorize the second key\n");
    return 1;
  }
  auto other_keys =
      security::loadOrCreateKeyPair(other_env["RINGMASTER_CONFIG_DIR"] + "/client.key");
  client::ZmqContext context;
  auto other = client::AgentConnection::connect(
      context, {"a1", agent.endpoint(), agent.publicKey()}, *other_keys);
  if (!other_keys.isOk() || !other.isOk()) {
    std::fprintf(stderr, "second key: cannot connect\n");
    return 1;
  }
  const std::string own_spec =
      cluster.writeSpec("own.yaml",
                        "name: own\nlauncher: command\ncommand: [/bin/sh, -c, 'seq 1 200000']\n"
                        "placement: [{agent: a1, ranks: 1}]\n");
  const CommandResult own =
      runCommand({binPath("ringmasterctl"), "submit", own_spec, "--wait"}, other_env);
  if (own.exit_code != 0) {
    std::fprintf(stderr, "the second key's job: %s\n", own.err.c_str());
    return 1;
  }

  // The peer: the same requests on the idle agent.
  std::atomic<bool> stop{false};
  std::thread idle_timer([&] {
    std::this_thread::sleep_for(std::chrono::seconds(5));
    stop = true;
  });
  const auto [idle, idle_reads] = pollOther(**other, own.firstLine(), stop);
  idle_timer.join();

  // The busy key's flood reads the log of a job that wrote 20 MB.
  const std::string big = cluster.writeSpec(
      "big.yaml",
      "name: big\nlauncher: command\n"
      "command: [/bin/sh, -c, 'head -c 20000000 /dev/zero | tr \"\\0\" x | fold -w 200']\n"
      "placement: [{agent: a1, ranks: 1}]\n");
  const CommandResult big_run = cluster.ctl({"submit", big, "--wait"});
  if (big_run.exit_code != 0) {
    std::fprintf(stderr, "big job: %s\n", big_run.err.c_str());
    return 1;
  }
  const std::string follow_spec = cluster.writeSpec(
      "short.yaml", "name: short\nlauncher: command\ncommand: [/bin/sh, -c, 'for i in $(seq 1 " +
                        std::to_string(kLinesPerJob) +
                        "); do echo fair-line $i; done']\nplacement: [{agent: a1, ranks: 1}]\n");

  stop = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::mutex mutex;
  int follows = 0, complete = 0, refused = 0;
  std::vector<std::string> submitted;
  std::string first_incomplete;
  std::vector<std::thread> followers;
  for (int c = 0; c < followers_n; ++c) {
    followers.emplace_back([&] {
      while (std::chrono::steady_clock::now() < deadline) {
        const CommandResult run = cluster.ctl({"submit", follow_spec, "--follow"}, 120000);
        const int lines = countLines(run.out);
        std::lock_guard<std::mutex> lock(mutex);
        ++follows;
        if (run.exit_code != 0) {
          ++refused;
          if (first_incomplete.empty()) first_incomplete = run.err;
          continue;
        }
        submitted.push_back(run.firstLine());
        if (lines == kLinesPerJob) {
          ++complete;
        } else if (first_incomplete.empty()) {
          first_incomplete =
              std::to_string(lines) + " of " + std::to_string(kLinesPerJob) + " lines: " + run.err;
        }
      }
    });
  }
  std::thread flood([&] {
    if (flood_n == 0) return;
    runCommand(
        {binPath("flood_client"), agent.endpoint(), agent.publicKey(),
         cluster.configDir() + "/client.key", big_run.firstLine(), "8", std::to_string(flood_n)},
        {}, seconds * 1000);
  });
  // The busy key's readers on a context (I/O thread) of their own, as another process would
  // be: their 16 MiB replies must not queue before the other key's in this process's decryption.
  auto busy_keys = security::loadOrCreateKeyPair(cluster.configDir() + "/client.key");
  client::ZmqContext busy_context;
  std::vector<std::unique_ptr<client::AgentConnection>> busy_connections;
  std::vector<std::thread> readers;
  for (int r = 0; r < busy_n && busy_keys.isOk(); ++r) {
    auto connection = client::AgentConnection::connect(
        busy_context, {"a1", agent.endpoint(), agent.publicKey()}, *busy_keys);
    if (!connection.isOk()) break;
    busy_connections.push_back(std::move(*connection));
    readers.emplace_back(readOverAndOver, std::ref(*busy_connections.back()), big_run.firstLine(),
                         std::cref(stop));
  }
  std::thread load_timer([&] {
    std::this_thread::sleep_until(deadline);
    stop = true;
  });
  const auto [loaded, loaded_reads] = pollOther(**other, own.firstLine(), stop);
  load_timer.join();
  for (std::thread& t : followers) t.join();
  for (std::thread& t : readers) t.join();
  flood.join();

  // Every job the followers submitted is in the history once.
  int rows = 0;
  bool doubled = false;
  if (auto history = store::Reader::open(cluster.dbPath()); history.isOk()) {
    if (auto jobs = (*history)->jobs(); jobs.isOk()) {
      std::set<std::string> ids;
      for (const auto& job : *jobs) doubled |= !ids.insert(job.job_id).second;
      for (const std::string& id : submitted) rows += static_cast<int>(ids.count(id));
    }
  }
  const int lost = static_cast<int>(submitted.size()) - rows;
  if (!first_incomplete.empty()) {
    std::fprintf(stderr, "first incomplete follow: %s\n", first_incomplete.c_str());
  }
  std::printf(
      "RESULT bench_fair_service seconds=%d followers=%d flood_connections=%d "
      "busy_readers=%d other_key_p50_ms=%.1f other_key_p99_ms=%.1f other_key_max_ms=%.1f "
      "other_key_failed=%d other_read_p50_ms=%.1f other_read_p99_ms=%.1f other_read_max_ms=%.1f "
      "other_read_failed=%d idle_p50_ms=%.1f idle_max_ms=%.1f idle_read_p50_ms=%.1f "
      "p99_vs_idle=%.1f follows=%d complete=%d refused=%d rows_lost=%d rows_doubled=%d "
      "agent_alive=%d\n",
      seconds, followers_n, flood_n, static_cast<int>(readers.size()), loaded.at(0.5),
      loaded.at(0.99), loaded.at(1.0), loaded.failed, loaded_reads.at(0.5), loaded_reads.at(0.99),
      loaded_reads.at(1.0), loaded_reads.failed, idle.at(0.5), idle.at(1.0), idle_reads.at(0.5),
      idle.at(0.5) > 0 ? loaded.at(0.99) / idle.at(0.5) : 0.0, follows, complete, refused, lost,
      doubled ? 1 : 0, agent.alive() ? 1 : 0);
  return 0;
}

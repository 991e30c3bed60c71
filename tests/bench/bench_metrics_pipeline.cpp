// bench_metrics_pipeline: metric records per second from an agent's journal, over CURVE, through
// the client library, into the SQLite history, with every record checked (lost = 0,
// duplicated = 0); side by side with the raw SQLite insert ceiling on this machine, measured in
// the same run (the same rows, prepared INSERT into a plain table, same pragmas, big
// transactions).
#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "harness.h"
#include "journal.h"
#include "ringmaster/client/cluster_client.h"

using namespace ringmaster;
using namespace ringmaster::testing;

namespace {

constexpr int kRanks = 8;

proto::JournalRecord metricRecord(uint64_t i) {
  proto::JournalRecord record;
  record.set_job("bench-job");
  record.set_attempt(1);
  const int rank = static_cast<int>(i % kRanks);
  record.set_source("rank:" + std::to_string(rank));
  record.set_time(1.7e9 + static_cast<double>(i) * 1e-3);
  auto* sample = record.mutable_metric();
  sample->set_rank(rank);
  sample->set_step(static_cast<int64_t>(i / kRanks));
  auto* value = sample->add_values();
  value->set_name("loss");
  value->set_value(1.0 / static_cast<double>(i + 1));
  return record;
}

double seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The same rows inserted the plainest fast way SQLite allows.
double sqliteCeiling(const std::string& path, uint64_t records) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db,
               "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
               "CREATE TABLE metrics(job TEXT, attempt INTEGER, rank INTEGER, step INTEGER, "
               "name TEXT, value REAL, time REAL);",
               nullptr, nullptr, nullptr);
  sqlite3_stmt* insert = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?, ?)", -1, &insert, nullptr);
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < records; ++i) {
    if (i % 20000 == 0) sqlite3_exec(db, i ? "COMMIT; BEGIN" : "BEGIN", nullptr, nullptr, nullptr);
    proto::JournalRecord r = metricRecord(i);
    sqlite3_bind_text(insert, 1, r.job().c_str(), -1, SQLITE_STATIC);
    sqlite3_bind_int(insert, 2, static_cast<int>(r.attempt()));
    sqlite3_bind_int(insert, 3, r.metric().rank());
    sqlite3_bind_int64(insert, 4, r.metric().step());
    sqlite3_bind_text(insert, 5, r.metric().values(0).name().c_str(), -1, SQLITE_STATIC);
    sqlite3_bind_double(insert, 6, r.metric().values(0).value());
    sqlite3_bind_double(insert, 7, r.time());
    sqlite3_step(insert);
    sqlite3_reset(insert);
  }
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  const double elapsed = seconds(start);
  sqlite3_finalize(insert);
  sqlite3_close(db);
  return static_cast<double>(records) / elapsed;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t records = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  Cluster cluster;

  // The agent's journal, filled before the agent starts (as if ranks had produced it).
  {
    auto journal = agent::Journal::open(cluster.dir() + "/agents/bench/journal");
    if (!journal.isOk()) {
      std::fprintf(stderr, "bench_metrics_pipeline: %s\n", journal.status().toString().c_str());
      return 1;
    }
    for (uint64_t i = 0; i < records; ++i) {
      proto::JournalRecord record = metricRecord(i);
      if (auto appended = (*journal)->append(record); !appended.isOk()) {
        std::fprintf(stderr, "bench_metrics_pipeline: %s\n", appended.status().toString().c_str());
        return 1;
      }
    }
  }
  std::string error;
  if (!cluster.addAgent("bench", 1, &error)) {
    std::fprintf(stderr, "bench_metrics_pipeline: %s\n", error.c_str());
    return 1;
  }

  client::ClientPaths paths;
  paths.cluster_file = cluster.clusterPath();
  paths.db_file = cluster.dbPath();
  paths.config_dir = cluster.configDir();
  auto client = client::ClusterClient::open(paths);
  if (!client.isOk()) {
    std::fprintf(stderr, "bench_metrics_pipeline: %s\n", client.status().toString().c_str());
    return 1;
  }
  // Every metric record the client receives, by journal seq: a second sighting is a duplicate.
  std::vector<uint8_t> seen(records + 64, 0);
  uint64_t duplicated = 0, received = 0;
  client::SyncOptions options;
  options.timeout_ms = 0;
  options.on_record = [&](const std::string&, const proto::JournalRecord& r) {
    if (!r.has_metric()) return;
    ++received;
    if (r.seq() < seen.size() && seen[r.seq()]++) ++duplicated;
  };
  const auto start = std::chrono::steady_clock::now();
  auto report = (*client)->sync({}, options);
  const double elapsed = seconds(start);
  if (!report.isOk() || !report->agent_errors.empty()) {
    std::fprintf(stderr, "bench_metrics_pipeline: sync failed: %s\n",
                 report.isOk() ? report->agent_errors.begin()->second.toString().c_str()
                               : report.status().toString().c_str());
    return 1;
  }
  // A second sync must add nothing.
  auto again = (*client)->sync({}, options);
  auto stored = (*(*client)->history())->countMetrics("bench-job");
  const int64_t rows = stored.isOk() ? *stored : -1;
  const int64_t lost = static_cast<int64_t>(records) - rows;
  duplicated += rows > static_cast<int64_t>(records) ? rows - static_cast<int64_t>(records) : 0;

  const double rate = static_cast<double>(records) / elapsed;
  const double ceiling = sqliteCeiling(cluster.dir() + "/ceiling.db", records);
  std::printf(
      "pipeline: %llu metric records journal -> CURVE -> client -> SQLite in %.2f s: %.0f/s\n",
      static_cast<unsigned long long>(records), elapsed, rate);
  std::printf("raw SQLite insert ceiling (same rows, plain table): %.0f rows/s\n", ceiling);
  std::printf("stored %lld, lost %lld, duplicated %llu, second sync pulled %llu record(s)\n",
              static_cast<long long>(rows), static_cast<long long>(lost),
              static_cast<unsigned long long>(duplicated),
              static_cast<unsigned long long>(again.isOk() ? again->records : 0));
  std::printf(
      "RESULT records_per_s=%.0f sqlite_ceiling_per_s=%.0f ratio_vs_sqlite=%.3f lost=%lld "
      "duplicated=%llu records=%llu seconds=%.3f\n",
      rate, ceiling, rate / ceiling, static_cast<long long>(lost),
      static_cast<unsigned long long>(duplicated), static_cast<unsigned long long>(records),
      elapsed);
  return lost == 0 && duplicated == 0 ? 0 : 1;
}

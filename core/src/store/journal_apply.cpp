#include <algorithm>
#include <cmath>
#include <string>

#include "ringmaster/job/job_model.h"
#include "store/database.h"

namespace ringmaster::store {

Status Database::applyChunks(const JournalChunk* chunks, size_t n) {
  RM_RETURN_IF_ERROR(begin_.run("starting a write transaction on " + path_));
  Status status = applyInTransaction(chunks, n);
  if (status.isOk()) status = commit_.run("committing journal records to " + path_);
  if (!status.isOk()) {
    // The batch's own failure is what is reported; a failed rollback leaves nothing committed.
    if (sqlite3_get_autocommit(db_.get()) == 0) (void)rollback_.run("rolling back");
    series_ids_.clear();
    metric_batch_.clear();
  }
  return status;
}

Status Database::applyInTransaction(const JournalChunk* chunks, size_t n) {
  progress_.clear();
  pending_folds_.clear();
  for (size_t c = 0; c < n; ++c) {
    const JournalChunk& chunk = chunks[c];
    for (const proto::JournalRecord& r : *chunk.records) {
      switch (r.kind_case()) {
        case proto::JournalRecord::kMetric:
          RM_RETURN_IF_ERROR(applyMetric(r));
          break;
        case proto::JournalRecord::kHealth:
          RM_RETURN_IF_ERROR(applyHealth(*chunk.agent, r));
          break;
        case proto::JournalRecord::kJobAccepted:
        case proto::JournalRecord::kRankStarted:
        case proto::JournalRecord::kRankExited:
        case proto::JournalRecord::kJobFinished:
        case proto::JournalRecord::kJobFailure:
        case proto::JournalRecord::kJobRestart:
        case proto::JournalRecord::kJobOutcome:
        case proto::JournalRecord::kJobDecision:
        case proto::JournalRecord::kHangSuspicion:
        case proto::JournalRecord::kGpuFault:
          RM_RETURN_IF_ERROR(applyLifecycle(*chunk.agent, r));
          break;
        case proto::JournalRecord::kJournalDamage:
          RM_RETURN_IF_ERROR(applyDamage(*chunk.agent, r));
          break;
        case proto::JournalRecord::KIND_NOT_SET:  // a kind this build does not know: skip it
          break;
      }
    }
    upsert_cursor_.bindText(1, *chunk.agent);
    upsert_cursor_.bindText(2, *chunk.journal_id);
    upsert_cursor_.bindInt64(3, static_cast<int64_t>(chunk.next_seq));
    RM_RETURN_IF_ERROR(upsert_cursor_.run("advancing the cursor of " + *chunk.agent));
  }
  // Nothing above reads the metrics table: holding its rows back to here changes no result.
  RM_RETURN_IF_ERROR(metric_batch_.insertAll());
  RM_RETURN_IF_ERROR(writeProgress());
  return foldJobs();
}

Result<int64_t> Database::seriesId(const std::string& job, uint32_t attempt, int rank,
                                   const std::string& name, bool create) {
  key_.assign(job);
  key_.push_back('\0');
  char fixed[sizeof attempt + sizeof rank];
  std::memcpy(fixed, &attempt, sizeof attempt);
  std::memcpy(fixed + sizeof attempt, &rank, sizeof rank);
  key_.append(fixed, sizeof fixed);
  key_.append(name);
  if (auto it = series_ids_.find(key_); it != series_ids_.end()) return it->second;

  int64_t id = -1;
  {
    ScopedReset reset(select_series_);
    select_series_.bindText(1, job);
    select_series_.bindInt64(2, attempt);
    select_series_.bindInt64(3, rank);
    select_series_.bindText(4, name);
    const int rc = select_series_.step();
    if (rc == SQLITE_ROW) {
      id = select_series_.columnInt64(0);
    } else if (rc != SQLITE_DONE) {
      return error(rc, "looking up metric series " + name);
    }
  }
  if (id < 0) {
    if (!create)
      return notFound("no metric '" + name + "' for rank " + std::to_string(rank) + " of job " +
                      job + " attempt " + std::to_string(attempt));
    insert_series_.bindText(1, job);
    insert_series_.bindInt64(2, attempt);
    insert_series_.bindInt64(3, rank);
    insert_series_.bindText(4, name);
    RM_RETURN_IF_ERROR(insert_series_.run("creating metric series " + name));
    id = sqlite3_last_insert_rowid(db_.get());
  }
  if (series_ids_.size() >= kMaxCachedSeries) series_ids_.clear();
  series_ids_.emplace(key_, id);
  return id;
}

// REQUIRES: `r` outlives the transaction (metric_batch_ keeps pointers to its strings).
Status Database::applyMetric(const proto::JournalRecord& r) {
  const proto::MetricSample& m = r.metric();
  for (const proto::MetricValue& v : m.values()) {
    RM_ASSIGN_OR_RETURN(const int64_t id, seriesId(r.job(), r.attempt(), m.rank(), v.name(), true));
    metric_batch_.add(id, static_cast<int64_t>(r.seq()), m.step(), v.value(), r.time(), r.job(),
                      m.rank(), v.name());
  }
  if (m.values_size() > 0) noteProgress(r.job(), r.attempt(), m.rank(), m.step());
  return Status::ok();
}

void Database::noteProgress(const std::string& job, uint32_t attempt, int rank, int64_t step) {
  // A batch comes from one agent, so it holds few ranks: a linear search beats hashing.
  for (auto it = progress_.rbegin(); it != progress_.rend(); ++it) {
    if (it->rank == rank && it->attempt == attempt && it->job == job) {
      it->step = std::max(it->step, step);
      return;
    }
  }
  progress_.push_back({job, attempt, rank, step});
}

Status Database::writeProgress() {
  for (const RankProgress& p : progress_) {
    update_last_step_.bindText(1, p.job);
    update_last_step_.bindInt64(2, p.attempt);
    update_last_step_.bindInt64(3, p.rank);
    update_last_step_.bindInt64(4, p.step);
    RM_RETURN_IF_ERROR(update_last_step_.run("updating the last step of rank " +
                                             std::to_string(p.rank) + " of job " + p.job));
  }
  return Status::ok();
}

Status Database::applyHealth(const std::string& agent, const proto::JournalRecord& r) {
  const proto::HealthSample& h = r.health();
  Statement& s = insert_health_;
  s.bindText(1, agent);
  s.bindInt64(2, static_cast<int64_t>(r.seq()));
  s.bindDouble(3, r.time());
  s.bindDouble(4, h.cpu_percent());
  s.bindInt64(5, static_cast<int64_t>(h.memory_used_bytes()));
  s.bindInt64(6, static_cast<int64_t>(h.memory_total_bytes()));
  s.bindDouble(7, h.load1());
  s.bindDouble(8, h.net_rx_bytes_per_s());
  s.bindDouble(9, h.net_tx_bytes_per_s());
  if (h.gpus_size() > 0) {
    proto::HealthSample gpus;
    *gpus.mutable_gpus() = h.gpus();
    s.bindBlob(10, gpus.SerializeAsString());
  }
  return s.run("storing a health sample of " + agent);
}

// The agent's report of a damaged journal is kept as an event of no job (job_id ''): the records
// it lost cannot say whose they were. The placeholders of single lost records carry no detail.
Status Database::applyDamage(const std::string& agent, const proto::JournalRecord& r) {
  const proto::JournalDamage& d = r.journal_damage();
  if (d.detail().empty()) return Status::ok();
  EventRow e;
  e.source = "journal:" + agent;
  e.seq = r.seq();
  e.agent = agent;
  e.time = r.time();
  e.kind = "journal_damage";
  e.detail = std::to_string(d.lost_records()) + " record(s) lost from seq " +
             std::to_string(d.first_lost_seq()) + " (" + d.detail() +
             "); the damaged file is kept at " + d.kept_at();
  e.problem = true;
  return insertEvent(e);
}

Status Database::insertEvent(const EventRow& e) {
  Statement& s = insert_event_;
  s.bindText(1, e.job_id);
  s.bindInt64(2, e.attempt);
  s.bindText(3, e.source);
  s.bindInt64(4, static_cast<int64_t>(e.seq));
  s.bindText(5, e.agent);
  s.bindDouble(6, e.time);
  s.bindText(7, e.kind);
  s.bindText(8, e.detail);
  s.bindInt64(9, e.rank);
  s.bindText(10, e.rank_agent);
  s.bindInt64(11, e.problem ? 1 : 0);
  s.bindInt64(12, e.exit_code);
  s.bindInt64(13, e.signal);
  s.bindText(14, e.cause_kind);
  return s.run("storing an event of job '" + e.job_id + "'");
}

Status Database::applyLifecycle(const std::string& agent, const proto::JournalRecord& r) {
  if (r.job().empty()) return Status::ok();  // lifecycle records always name a job
  const std::string& job = r.job();
  const int64_t attempt = r.attempt();

  // The event row is the record's idempotency key: a replayed record changes nothing, so an old
  // RankStarted can never turn an exited rank back into a running one.
  RM_RETURN_IF_ERROR(insertEvent(eventOf(agent, r)));
  if (sqlite3_changes(db_.get()) == 0) return Status::ok();

  if (r.has_job_accepted()) {
    const proto::JobAccepted& a = r.job_accepted();
    accept_job_.bindText(1, job);
    accept_job_.bindText(2, a.name());
    accept_job_.bindText(3, launcherNameOf(a.launcher()));
    accept_job_.bindInt64(4, a.world_size());
    accept_job_.bindText(5, a.spec_yaml());
    accept_job_.bindDouble(6, r.time());
    accept_job_.bindInt64(7, attempt);
    RM_RETURN_IF_ERROR(accept_job_.run("storing job " + job));
  } else {
    ensure_job_.bindText(1, job);
    ensure_job_.bindDouble(2, r.time());
    ensure_job_.bindInt64(3, attempt);
    RM_RETURN_IF_ERROR(ensure_job_.run("storing job " + job));
  }
  ensure_attempt_.bindText(1, job);
  ensure_attempt_.bindInt64(2, attempt);
  ensure_attempt_.bindDouble(3, r.time());
  RM_RETURN_IF_ERROR(ensure_attempt_.run("storing attempt of job " + job));

  switch (r.kind_case()) {
    case proto::JournalRecord::kJobAccepted:
      for (const proto::RankAssignment& a : r.job_accepted().ranks()) {
        accept_rank_.bindText(1, job);
        accept_rank_.bindInt64(2, attempt);
        accept_rank_.bindInt64(3, a.rank());
        accept_rank_.bindText(4, agent);
        accept_rank_.bindInt64(5, a.local_rank());
        RM_RETURN_IF_ERROR(accept_rank_.run("storing ranks of job " + job));
      }
      break;
    case proto::JournalRecord::kRankStarted: {
      const proto::RankStarted& s = r.rank_started();
      start_rank_.bindText(1, job);
      start_rank_.bindInt64(2, attempt);
      start_rank_.bindInt64(3, s.rank());
      start_rank_.bindText(4, agent);
      start_rank_.bindInt64(5, s.local_rank());
      start_rank_.bindInt64(6, s.pid());
      start_rank_.bindDouble(7, r.time());
      start_rank_.bindText(8, s.device());
      RM_RETURN_IF_ERROR(start_rank_.run("storing the start of a rank of job " + job));
      break;
    }
    case proto::JournalRecord::kRankExited: {
      const proto::RankExited& e = r.rank_exited();
      exit_rank_.bindText(1, job);
      exit_rank_.bindInt64(2, attempt);
      exit_rank_.bindInt64(3, e.rank());
      exit_rank_.bindText(4, agent);
      exit_rank_.bindText(5, rankStateName(e));
      exit_rank_.bindInt64(6, e.exit_code());
      exit_rank_.bindInt64(7, e.signal());
      exit_rank_.bindText(8, e.error());
      exit_rank_.bindDouble(9, r.time());
      std::string tail;
      for (const std::string& line : e.tail()) tail += line + "\n";
      exit_rank_.bindText(10, tail);
      RM_RETURN_IF_ERROR(exit_rank_.run("storing the exit of a rank of job " + job));
      break;
    }
    default:  // the rest is the job model's to fold (foldJobs); the event keeps it
      break;
  }
  pending_folds_[job].emplace_back(&agent, &r);
  return Status::ok();
}

Result<job::JobModel> Database::loadModel(const std::string& job_id) {
  JobRow row;
  {
    ScopedReset reset(select_fold_);
    select_fold_.bindText(1, job_id);
    const int rc = select_fold_.step();
    if (rc == SQLITE_DONE) return notFound("no job '" + job_id + "' in the history");
    if (rc != SQLITE_ROW) return error(rc, "reading the state of job " + job_id);
    row = readJob(select_fold_);
  }
  RM_ASSIGN_OR_RETURN(std::vector<RankRow> ranks, readRanks(job_id, row.fold.attempt()));
  job::JobModel model(job_id);
  model.applyStored(storedJobOf(row, ranks));
  return model;
}

Status Database::saveModel(const std::string& job_id, const job::JobModel& model) {
  const char* state = job::phaseName(model.phase());
  save_fold_.bindText(1, job_id);
  save_fold_.bindText(2, state);
  save_fold_.bindDouble(3, model.endTime());
  save_fold_.bindInt64(4, model.restartsLeft());
  save_fold_.bindBlob(5, model.fold().SerializeAsString());
  RM_RETURN_IF_ERROR(save_fold_.run("updating the state of job " + job_id));
  set_attempt_state_.bindText(1, job_id);
  set_attempt_state_.bindInt64(2, model.attempt());
  set_attempt_state_.bindText(3, state);
  set_attempt_state_.bindDouble(4, model.endTime());
  return set_attempt_state_.run("updating an attempt of job " + job_id);
}

// The one fold (job::JobModel) goes on from where the last batch left it: the history never
// decides a state of its own.
Status Database::foldJobs() {
  for (const auto& [job_id, records] : pending_folds_) {
    RM_ASSIGN_OR_RETURN(job::JobModel model, loadModel(job_id));
    for (const auto& [agent, record] : records) model.apply(*agent, *record);
    RM_RETURN_IF_ERROR(saveModel(job_id, model));
  }
  return Status::ok();
}

}  // namespace ringmaster::store

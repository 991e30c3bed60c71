#include <string>
#include <vector>

#include "ringmaster/job/job_model.h"
#include "ringmaster/util/wall_clock.h"
#include "store/database.h"

namespace ringmaster::store {

// ---------------------------------------------------------------------------------------------
// The client's own rows: they exist nowhere else (Writer commits them durably).

Status Database::recordSubmission(const JobRow& job) {
  if (job.job_id.empty()) return invalidArgument("recordSubmission: job_id is empty");
  Statement& s = record_submission_;
  s.bindText(1, job.job_id);
  s.bindText(2, job.name);
  s.bindText(3, job.launcher);
  s.bindInt64(4, job.world_size);
  s.bindText(5, job.spec_yaml);
  s.bindDouble(6, job.submitted_at);
  return s.run("storing the submission of job " + job.job_id);
}

Status Database::recordAgent(const std::string& name, const std::string& endpoint,
                             const proto::Inventory& inv) {
  if (name.empty()) return invalidArgument("recordAgent: agent name is empty");
  Statement& s = record_agent_;
  s.bindText(1, name);
  s.bindText(2, endpoint);
  s.bindBlob(3, inv.SerializeAsString());
  s.bindDouble(4, unixSeconds());
  return s.run("storing agent " + name);
}

Status Database::recordSlurmJob(const SlurmJobRow& row) {
  if (row.job_id.empty()) return invalidArgument("recordSlurmJob: job_id is empty");
  RM_ASSIGN_OR_RETURN(Statement s, Statement::prepare(db_.get(), R"sql(
INSERT OR REPLACE INTO slurm_jobs(job_id, cluster, job_dir, slurm_job_id, state, reason, updated_at)
  VALUES(?, ?, ?, ?, ?, ?, ?))sql"));
  s.bindText(1, row.job_id);
  s.bindText(2, row.cluster);
  s.bindText(3, row.job_dir);
  s.bindText(4, row.slurm_job_id);
  s.bindText(5, row.state);
  s.bindText(6, row.reason);
  s.bindDouble(7, row.updated_at);
  return s.run("storing the Slurm state of job " + row.job_id);
}

Status Database::endUnfinishedJob(const std::string& job_id, const std::string& state, double at) {
  const std::optional<job::JobPhase> phase = job::jobPhaseNamed(state);
  if (phase != job::JobPhase::kFailed && phase != job::JobPhase::kStopped) {
    return invalidArgument("a job its scheduler ended is failed or stopped, not '" + state + "'");
  }
  RM_RETURN_IF_ERROR(begin_.run("ending job " + job_id));
  auto end = [&]() -> Status {
    Result<job::JobModel> loaded = loadModel(job_id);
    if (loaded.status().code() == ErrorCode::kNotFound) return Status::ok();
    RM_ASSIGN_OR_RETURN(job::JobModel model, std::move(loaded));
    if (model.decided()) return Status::ok();  // its leader said how it ended
    model.endedByScheduler(*phase, at);
    RM_ASSIGN_OR_RETURN(
        Statement ranks,
        Statement::prepare(db_.get(),
                           "UPDATE ranks SET state = ?3, finished_at = ?4 WHERE job_id = ?1 AND "
                           "attempt = ?2 AND state IN ('pending', 'running')"));
    ranks.bindText(1, job_id);
    ranks.bindInt64(2, model.attempt());
    ranks.bindText(3, state);
    ranks.bindDouble(4, at);
    RM_RETURN_IF_ERROR(ranks.run("ending the ranks of job " + job_id));
    return saveModel(job_id, model);
  };
  Status status = end();
  if (status.isOk()) status = commit_.run("ending job " + job_id);
  if (!status.isOk() && sqlite3_get_autocommit(db_.get()) == 0) {
    (void)rollback_.run("rolling back");  // `status` says what failed
  }
  return status;
}

// ---------------------------------------------------------------------------------------------
// Archive and delete: rare, a handful of jobs at a time, so their statements are not cached.

Status Database::forEachJob(const std::vector<std::string>& job_ids, const char* sql, double at,
                            std::string_view what) {
  RM_ASSIGN_OR_RETURN(Statement s, Statement::prepare(db_.get(), sql));
  RM_RETURN_IF_ERROR(db_.exec("BEGIN IMMEDIATE", what));
  for (const std::string& id : job_ids) {
    ScopedReset reset(s);
    s.bindText(1, id);
    s.bindDouble(2, at);
    Status status = s.run(std::string(what) + " " + id);
    if (!status.isOk()) {
      (void)db_.exec("ROLLBACK", "rolling back");  // `status` says what failed
      return status;
    }
  }
  return db_.exec("COMMIT", what);
}

Status Database::setArchived(const std::vector<std::string>& job_ids, bool archived) {
  return forEachJob(job_ids,
                    archived ? "UPDATE jobs SET archived = 1 WHERE job_id = ?1"
                             : "UPDATE jobs SET archived = 0 WHERE job_id = ?1",
                    0, archived ? "archiving job" : "unarchiving job");
}

Status Database::markDeleted(const std::vector<std::string>& job_ids, double at) {
  if (!(at > 0)) return invalidArgument("markDeleted: the time must be positive");
  return forEachJob(job_ids, "UPDATE jobs SET deleted_at = ?2 WHERE job_id = ?1", at,
                    "deleting job");
}

Status Database::undelete(const std::vector<std::string>& job_ids) {
  return forEachJob(job_ids, "UPDATE jobs SET deleted_at = 0 WHERE job_id = ?1", 0,
                    "undeleting job");
}

Status Database::purgeJob(const std::string& job_id) {
  static const char* const kDeletes[] = {
      "DELETE FROM metrics WHERE series_id IN (SELECT id FROM series WHERE job_id = ?1)",
      "DELETE FROM series WHERE job_id = ?1",
      "DELETE FROM ranks WHERE job_id = ?1",
      "DELETE FROM attempts WHERE job_id = ?1",
      "DELETE FROM events WHERE job_id = ?1",
      "DELETE FROM slurm_jobs WHERE job_id = ?1",
      "DELETE FROM jobs WHERE job_id = ?1",
  };
  for (const char* sql : kDeletes) {
    RM_ASSIGN_OR_RETURN(Statement s, Statement::prepare(db_.get(), sql));
    s.bindText(1, job_id);
    RM_RETURN_IF_ERROR(s.run("purging job " + job_id));
  }
  return Status::ok();
}

Result<int> Database::purgeDeleted(const std::vector<std::string>* job_ids) {
  std::vector<std::string> marked;
  {
    RM_ASSIGN_OR_RETURN(Statement s, Statement::prepare(db_.get(),
                                                        "SELECT job_id FROM jobs WHERE "
                                                        "deleted_at > 0 ORDER BY job_id"));
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
      std::string id = s.columnText(0);
      if (!job_ids || std::find(job_ids->begin(), job_ids->end(), id) != job_ids->end()) {
        marked.push_back(std::move(id));
      }
    }
    if (rc != SQLITE_DONE) return error(rc, "listing the deleted jobs");
  }
  if (marked.empty()) return 0;
  RM_RETURN_IF_ERROR(db_.exec("BEGIN IMMEDIATE", "purging deleted jobs"));
  for (const std::string& id : marked) {
    Status status = purgeJob(id);
    if (!status.isOk()) {
      (void)db_.exec("ROLLBACK", "rolling back");  // `status` says what failed
      return status;
    }
  }
  RM_RETURN_IF_ERROR(db_.exec("COMMIT", "purging deleted jobs"));
  // Their series ids are gone: a cached one would file a late metric under no series.
  series_ids_.clear();
  return static_cast<int>(marked.size());
}

}  // namespace ringmaster::store

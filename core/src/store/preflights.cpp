// Cluster preflight reports (store/preflight_report.h): one row per check, its agents, their GPU
// faults, its links and its verdict in tables of their own, so that a host's or a link's figures
// can be read across checks. A check is a few dozen rows: none of these statements is cached.

#include <map>

#include "store/database.h"

namespace ringmaster::store {
namespace {

// The check's rows; its id is the new row's (one more than the newest kept: INTEGER PRIMARY KEY).
Result<int64_t> insertAll(sqlite3* db, const PreflightReport& report) {
  RM_ASSIGN_OR_RETURN(Statement head,
                      Statement::prepare(db,
                                         "INSERT INTO preflights(started_at, seconds, median_gbps) "
                                         "VALUES(?, ?, ?)"));
  head.bindDouble(1, report.started_at);
  head.bindDouble(2, report.seconds);
  head.bindDouble(3, report.median_gbps);
  RM_RETURN_IF_ERROR(head.run("storing a preflight"));
  const int64_t id = sqlite3_last_insert_rowid(db);

  RM_ASSIGN_OR_RETURN(Statement agent, Statement::prepare(db, R"sql(
INSERT INTO preflight_agents(preflight_id, position, agent, error, cpus, load1, memory_total,
  memory_used, state_dir, disk_free, disk_total, clock_offset_s, round_trip_ms, gpus)
  VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?))sql"));
  RM_ASSIGN_OR_RETURN(Statement fault, Statement::prepare(db, R"sql(
INSERT INTO preflight_gpu_faults(preflight_id, agent_position, position, gpu, severity, kind, text)
  VALUES(?, ?, ?, ?, ?, ?, ?))sql"));
  for (size_t i = 0; i < report.agents.size(); ++i) {
    const AgentCheck& a = report.agents[i];
    agent.bindInt64(1, id);
    agent.bindInt64(2, static_cast<int64_t>(i));
    agent.bindText(3, a.agent);
    agent.bindText(4, a.error);
    agent.bindInt64(5, a.cpus);
    agent.bindDouble(6, a.load1);
    agent.bindInt64(7, static_cast<int64_t>(a.memory_total));
    agent.bindInt64(8, static_cast<int64_t>(a.memory_used));
    agent.bindText(9, a.state_dir);
    agent.bindInt64(10, static_cast<int64_t>(a.disk_free));
    agent.bindInt64(11, static_cast<int64_t>(a.disk_total));
    agent.bindDouble(12, a.clock_offset_s);
    agent.bindDouble(13, a.round_trip_ms);
    agent.bindInt64(14, a.gpus);
    RM_RETURN_IF_ERROR(agent.run("storing a preflight's check of " + a.agent));
    for (size_t f = 0; f < a.gpu_faults.size(); ++f) {
      const AgentCheck::Fault& gf = a.gpu_faults[f];
      fault.bindInt64(1, id);
      fault.bindInt64(2, static_cast<int64_t>(i));
      fault.bindInt64(3, static_cast<int64_t>(f));
      fault.bindInt64(4, gf.gpu);
      fault.bindInt64(5, static_cast<int64_t>(gf.fault.severity));
      fault.bindText(6, gf.fault.kind);
      fault.bindText(7, gf.fault.text);
      RM_RETURN_IF_ERROR(fault.run("storing a preflight's GPU fault of " + a.agent));
    }
  }

  RM_ASSIGN_OR_RETURN(Statement link, Statement::prepare(db, R"sql(
INSERT INTO preflight_links(preflight_id, position, a, b, job_id, error, gbps, latency_us)
  VALUES(?, ?, ?, ?, ?, ?, ?, ?))sql"));
  for (size_t i = 0; i < report.links.size(); ++i) {
    const LinkCheck& l = report.links[i];
    link.bindInt64(1, id);
    link.bindInt64(2, static_cast<int64_t>(i));
    link.bindText(3, l.a);
    link.bindText(4, l.b);
    link.bindText(5, l.job_id);
    link.bindText(6, l.error);
    link.bindDouble(7, l.gbps);
    link.bindDouble(8, l.latency_us);
    RM_RETURN_IF_ERROR(link.run("storing a preflight's link " + l.a + " <-> " + l.b));
  }

  RM_ASSIGN_OR_RETURN(Statement problem,
                      Statement::prepare(db,
                                         "INSERT INTO preflight_problems(preflight_id, position, "
                                         "text) VALUES(?, ?, ?)"));
  for (size_t i = 0; i < report.problems.size(); ++i) {
    problem.bindInt64(1, id);
    problem.bindInt64(2, static_cast<int64_t>(i));
    problem.bindText(3, report.problems[i]);
    RM_RETURN_IF_ERROR(problem.run("storing a preflight's verdict"));
  }
  return id;
}

}  // namespace

Result<int64_t> Database::recordPreflight(const PreflightReport& report) {
  if (!(report.started_at > 0)) return invalidArgument("recordPreflight: started_at is not set");
  RM_RETURN_IF_ERROR(begin_.run("storing a preflight"));
  Result<int64_t> id = insertAll(db_.get(), report);
  Status status = id.status();
  if (status.isOk()) status = commit_.run("storing a preflight");
  if (!status.isOk()) {
    if (sqlite3_get_autocommit(db_.get()) == 0) (void)rollback_.run("rolling back");
    return status;
  }
  return id;
}

Result<std::vector<PreflightReport>> Database::preflights(int limit, int64_t id) {
  std::vector<PreflightReport> reports;
  std::map<int64_t, size_t> index;  // preflight id -> position in reports
  RM_ASSIGN_OR_RETURN(Statement head, Statement::prepare(db_.get(), R"sql(
SELECT id, started_at, seconds, median_gbps FROM preflights WHERE ?1 = 0 OR id = ?1
  ORDER BY id DESC LIMIT ?2)sql"));
  head.bindInt64(1, id);
  head.bindInt64(2, limit);
  int rc;
  while ((rc = head.step()) == SQLITE_ROW) {
    PreflightReport& r = reports.emplace_back();
    r.id = head.columnInt64(0);
    r.started_at = head.columnDouble(1);
    r.seconds = head.columnDouble(2);
    r.median_gbps = head.columnDouble(3);
    index[r.id] = reports.size() - 1;
  }
  if (rc != SQLITE_DONE) return error(rc, "listing the preflights");
  if (reports.empty()) return reports;
  // The parts of the listed checks, each table read once in order over their range of ids.
  auto forEachRow = [&](const char* sql,
                        const std::function<void(PreflightReport&, Statement&)>& row) -> Status {
    RM_ASSIGN_OR_RETURN(Statement s, Statement::prepare(db_.get(), sql));
    s.bindInt64(1, reports.back().id);
    s.bindInt64(2, reports.front().id);
    int step;
    while ((step = s.step()) == SQLITE_ROW) {
      auto found = index.find(s.columnInt64(0));
      if (found != index.end()) row(reports[found->second], s);
    }
    if (step != SQLITE_DONE) return error(step, "reading the preflights");
    return Status::ok();
  };
  RM_RETURN_IF_ERROR(forEachRow(R"sql(
SELECT preflight_id, agent, error, cpus, load1, memory_total, memory_used, state_dir, disk_free,
  disk_total, clock_offset_s, round_trip_ms, gpus FROM preflight_agents
  WHERE preflight_id BETWEEN ? AND ? ORDER BY preflight_id, position)sql",
                                [](PreflightReport& r, Statement& s) {
                                  AgentCheck& a = r.agents.emplace_back();
                                  a.agent = s.columnText(1);
                                  a.error = s.columnText(2);
                                  a.cpus = static_cast<uint32_t>(s.columnInt64(3));
                                  a.load1 = s.columnDouble(4);
                                  a.memory_total = static_cast<uint64_t>(s.columnInt64(5));
                                  a.memory_used = static_cast<uint64_t>(s.columnInt64(6));
                                  a.state_dir = s.columnText(7);
                                  a.disk_free = static_cast<uint64_t>(s.columnInt64(8));
                                  a.disk_total = static_cast<uint64_t>(s.columnInt64(9));
                                  a.clock_offset_s = s.columnDouble(10);
                                  a.round_trip_ms = s.columnDouble(11);
                                  a.gpus = static_cast<int>(s.columnInt64(12));
                                }));
  RM_RETURN_IF_ERROR(forEachRow(R"sql(
SELECT preflight_id, agent_position, gpu, severity, kind, text FROM preflight_gpu_faults
  WHERE preflight_id BETWEEN ? AND ? ORDER BY preflight_id, agent_position, position)sql",
                                [](PreflightReport& r, Statement& s) {
                                  const auto at = static_cast<size_t>(s.columnInt64(1));
                                  if (at >= r.agents.size()) return;
                                  AgentCheck::Fault& f = r.agents[at].gpu_faults.emplace_back();
                                  f.gpu = static_cast<uint32_t>(s.columnInt64(2));
                                  f.fault.severity =
                                      static_cast<hardware::FaultSeverity>(s.columnInt64(3));
                                  f.fault.kind = s.columnText(4);
                                  f.fault.text = s.columnText(5);
                                }));
  RM_RETURN_IF_ERROR(forEachRow(R"sql(
SELECT preflight_id, a, b, job_id, error, gbps, latency_us FROM preflight_links
  WHERE preflight_id BETWEEN ? AND ? ORDER BY preflight_id, position)sql",
                                [](PreflightReport& r, Statement& s) {
                                  LinkCheck& l = r.links.emplace_back();
                                  l.a = s.columnText(1);
                                  l.b = s.columnText(2);
                                  l.job_id = s.columnText(3);
                                  l.error = s.columnText(4);
                                  l.gbps = s.columnDouble(5);
                                  l.latency_us = s.columnDouble(6);
                                }));
  RM_RETURN_IF_ERROR(
      forEachRow(R"sql(
SELECT preflight_id, text FROM preflight_problems
  WHERE preflight_id BETWEEN ? AND ? ORDER BY preflight_id, position)sql",
                 [](PreflightReport& r, Statement& s) { r.problems.push_back(s.columnText(1)); }));
  return reports;
}

}  // namespace ringmaster::store

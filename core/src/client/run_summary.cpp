#include "ringmaster/client/run_summary.h"

#include <utility>

namespace ringmaster::client {

Result<std::vector<RunSummary>> loadRunSummaries(store::Reader& store,
                                                 const RunLoadOptions& options) {
  if (options.loss_metric.empty()) return invalidArgument("loadRunSummaries: loss_metric is empty");
  RM_ASSIGN_OR_RETURN(std::vector<store::JobRow> jobs, store.jobs());
  if (jobs.size() > options.limit) jobs.resize(options.limit);
  std::vector<RunSummary> runs;
  runs.reserve(jobs.size());
  for (store::JobRow& job : jobs) {
    RunSummary run;
    // One bucket: its `last` is the value of the highest step, i.e. the final loss; its `min`
    // the best. When loss_rank reports none, the first rank that does: a pipeline's loss comes
    // from its last stage, a parameter server's from its workers.
    auto loss = store.series(job.job_id, job.attempt, options.loss_rank, options.loss_metric, 1);
    auto none = [](const Result<std::vector<store::SeriesPoint>>& series) {
      return series.isOk() ? series->empty() : series.status().code() == ErrorCode::kNotFound;
    };
    for (int rank = 0; rank < job.world_size && none(loss); ++rank) {
      if (rank != options.loss_rank) {
        loss = store.series(job.job_id, job.attempt, rank, options.loss_metric, 1);
      }
    }
    if (loss.isOk()) {
      if (!loss->empty()) {
        run.final_loss = loss->back().last;
        run.best_loss = loss->back().min;
      }
    } else if (loss.status().code() != ErrorCode::kNotFound) {
      return Status(loss.status().code(),
                    "reading the final loss of job " + job.job_id + ": " + loss.status().message());
    }
    if (job.finished_at <= 0) {
      RM_ASSIGN_OR_RETURN(const std::vector<store::RankRow> ranks, store.ranks(job.job_id));
      for (const store::RankRow& rank : ranks) {
        run.ranks.push_back({rank.rank, rank.agent,
                             rank.state == "running" || rank.state == "pending", rank.last_step});
      }
    }
    run.job = std::move(job);
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace ringmaster::client

// The ranks' logs of a job on Slurm (SlurmLogPrinter), and `ringmasterctl logs JOB [--rank R]
// [--follow]` of such a job: --follow reads what the logs add, from attempt to attempt (an
// in-allocation restart, a requeue), until the job is over.
#include "slurm_logs.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include "ctl.h"
#include "ringmaster/client/slurm_sync.h"
#include "terminal_safe.h"

namespace ringmaster::ctl {
namespace {

constexpr uint64_t kReadBytes = 1 << 20;  // per log and round
constexpr auto kFollowEvery = std::chrono::seconds(1);
constexpr auto kStateEvery = std::chrono::seconds(5);

}  // namespace

SlurmLogPrinter::SlurmLogPrinter(const store::SlurmJobRow& slurm, const slurm::Where& where,
                                 std::optional<int> rank)
    : files_(slurm::jobFilesAt(where)),
      dir_{slurm.job_dir},
      job_id_(slurm.job_id),
      only_rank_(rank) {}

Result<uint64_t> SlurmLogPrinter::round(const std::vector<store::RankRow>& ranks,
                                        bool mark_attempts) {
  RM_ASSIGN_OR_RETURN(const auto logs, files_->rankLogs(dir_, job_id_));
  std::vector<std::pair<std::string, uint64_t>> wanted;
  std::vector<Log*> reading;
  for (const auto& r : ranks) {
    if (only_rank_ && r.rank != *only_rank_) continue;
    const auto path = logs.find({r.attempt, r.rank});
    if (path == logs.end()) continue;
    Log& log = logs_[r.rank];
    if (log.attempt != r.attempt) {  // the next attempt's log starts from its beginning
      finishLine(log);
      if (mark_attempts && log.attempt != 0) {
        print(r.rank, "--- attempt " + std::to_string(r.attempt) + " ---");
      }
      log = Log{r.rank, r.attempt, path->second};
    }
    wanted.push_back({log.path, log.offset});
    reading.push_back(&log);
  }
  RM_ASSIGN_OR_RETURN(const std::vector<std::string> chunks, files_->readFrom(wanted, kReadBytes));
  uint64_t bytes = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    Log& log = *reading[i];
    log.offset += chunks[i].size();
    bytes += chunks[i].size();
    log.partial += chunks[i];
    size_t start = 0;
    for (size_t newline; (newline = log.partial.find('\n', start)) != std::string::npos;
         start = newline + 1) {
      print(log.rank, log.partial.substr(start, newline - start));
    }
    log.partial.erase(0, start);
  }
  return bytes;
}

int SlurmLogPrinter::finish(const std::vector<store::RankRow>& ranks) {
  int missing = 0;
  for (const auto& r : ranks) {
    if (only_rank_ && r.rank != *only_rank_) continue;
    auto log = logs_.find(r.rank);
    if (log == logs_.end()) {
      printError("rank " + std::to_string(r.rank) + ": no log in " + dir_.root);
      ++missing;
      continue;
    }
    finishLine(log->second);
  }
  return missing;
}

void SlurmLogPrinter::finishLine(Log& log) {
  if (!log.partial.empty()) print(log.rank, log.partial);
  log.partial.clear();
}

void SlurmLogPrinter::print(int rank, const std::string& line) {
  if (only_rank_) {
    std::printf("%s\n", line.c_str());
  } else {
    std::printf("[rank %d] %s\n", rank, terminalSafe(line).c_str());
  }
}

int printSlurmLogs(store::Reader& history, store::BatchWriter& writer,
                   const store::SlurmJobRow& slurm, const slurm::Where& where,
                   const LogsFlags& flags) {
  SlurmLogPrinter printer(slurm, where, flags.rank);
  auto ranks = history.ranks(slurm.job_id);
  if (!ranks.isOk()) {
    printError(ranks.status().message());
    return kExitFailure;
  }
  if (!flags.follow) {
    while (true) {  // a round reads at most kReadBytes of each log
      auto read = printer.round(*ranks, /*mark_attempts=*/false);
      if (!read.isOk()) {
        printError(read.status().message());
        return kExitFailure;
      }
      if (*read == 0) break;
    }
    return printer.finish(*ranks) ? kExitFailure : kExitOk;
  }
  client::SlurmJobSync sync(slurm::JobDir{slurm.job_dir}, &history, &writer, where);
  store::SlurmJobRow row = slurm;
  auto next_state = std::chrono::steady_clock::now();
  while (true) {
    if (auto polled = sync.poll(); !polled.isOk()) {
      printError("warning: " + polled.status().message());
    }
    if (std::chrono::steady_clock::now() >= next_state) {
      static_cast<void>(client::refreshSlurmState(&writer, where, &row));
      next_state = std::chrono::steady_clock::now() + kStateEvery;
    }
    if (Status stored = writer.flush(); !stored.isOk()) printError(stored.message());
    auto job = history.job(slurm.job_id);
    ranks = history.ranks(slurm.job_id);
    if (!job.isOk() || !ranks.isOk()) {
      printError((job.isOk() ? ranks.status() : job.status()).message());
      return kExitFailure;
    }
    auto read = printer.round(*ranks, /*mark_attempts=*/true);
    if (!read.isOk()) printError("warning: " + read.status().message());
    std::fflush(stdout);
    // Over once the history says so and the logs hold nothing more.
    if (job->finished_at > 0 && read.isOk() && *read == 0) break;
    if (!read.isOk() || *read < kReadBytes) std::this_thread::sleep_for(kFollowEvery);
  }
  return printer.finish(*ranks) ? kExitFailure : kExitOk;
}

}  // namespace ringmaster::ctl

#pragma once
// The ranks' logs of a job on Slurm, printed from its job directory (slurm/job_files.h: here or
// on the login node): what each rank's newest log added since the last round, a line at a time,
// "[rank R] " before each line unless one rank was asked for.
//
// Not thread-safe: one thread uses it.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/slurm/job_files.h"
#include "ringmaster/store/store.h"

namespace ringmaster::ctl {

class SlurmLogPrinter {
 public:
  SlurmLogPrinter(const store::SlurmJobRow& slurm, const slurm::Where& where,
                  std::optional<int> rank);

  // Prints what each rank's newest log (per `ranks`, the job's ranks) added since the last
  // round, at most a MiB of each; returns how many bytes that was. mark_attempts: a line says
  // where a rank's next attempt begins.
  Result<uint64_t> round(const std::vector<store::RankRow>& ranks, bool mark_attempts);

  // Prints the last lines without a line break; says which ranks have no log and returns how
  // many.
  int finish(const std::vector<store::RankRow>& ranks);

 private:
  struct Log {
    int rank = 0;
    uint32_t attempt = 0;
    std::string path;
    uint64_t offset = 0;
    std::string partial{};  // a line still without its line break
  };
  void finishLine(Log& log);
  void print(int rank, const std::string& line);

  std::unique_ptr<slurm::JobFiles> files_;
  slurm::JobDir dir_;
  std::string job_id_;
  std::optional<int> only_rank_;
  std::map<int, Log> logs_;  // by rank
};

}  // namespace ringmaster::ctl

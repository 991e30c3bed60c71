#include "ringmaster/slurm/queries.h"

namespace ringmaster::slurm {
namespace {

constexpr int kQueryTimeoutMs = 30000;

std::string firstLine(std::string text) {
  text = text.substr(0, text.find('\n'));
  return text;
}

}  // namespace

Result<JobState> queryJob(const Where& where, const std::string& slurm_job_id) {
  RM_ASSIGN_OR_RETURN(
      CommandOutput squeue,
      runCommand({"squeue", "-h", "-j", slurm_job_id, "-o", "%i|%T|%r"}, where, kQueryTimeoutMs));
  if (squeue.exit_code == 0) {
    RM_ASSIGN_OR_RETURN(auto jobs, parseSqueue(squeue.out));
    for (const auto& job : jobs) {
      if (job.job_id == slurm_job_id) return job;
    }
  }
  // Gone from the queue: accounting knows it for good; without it, scontrol for a while.
  auto sacct = runCommand(
      {"sacct", "-X", "-n", "--parsable2", "-j", slurm_job_id, "-o", "JobID,State,ExitCode,Reason"},
      where, kQueryTimeoutMs);
  if (sacct.isOk() && sacct->exit_code == 0) {
    auto jobs = parseSacct(sacct->out);
    if (jobs.isOk()) {
      for (const auto& job : *jobs) {
        if (job.job_id == slurm_job_id) return job;
      }
    }
  }
  RM_ASSIGN_OR_RETURN(
      CommandOutput scontrol,
      runCommand({"scontrol", "-o", "show", "job", slurm_job_id}, where, kQueryTimeoutMs));
  if (scontrol.exit_code == 0) return parseScontrolJob(firstLine(scontrol.out));
  return notFound("Slurm no longer knows job " + slurm_job_id +
                  " (it ended, and the cluster keeps no accounting of it)");
}

Status cancelJob(const Where& where, const std::string& slurm_job_id) {
  RM_ASSIGN_OR_RETURN(CommandOutput scancel,
                      runCommand({"scancel", slurm_job_id}, where, kQueryTimeoutMs));
  if (scancel.exit_code != 0) {
    return Status(ErrorCode::kUnavailable,
                  "scancel " + slurm_job_id + " failed: " + firstLine(scancel.err));
  }
  return Status::ok();
}

}  // namespace ringmaster::slurm

#pragma once
// Asking Slurm about one job, and cancelling it, here or on a login node (slurm/command.h).
//
// Thread safety: no shared state.

#include <string>

#include "ringmaster/slurm/command.h"
#include "ringmaster/slurm/job_state.h"

namespace ringmaster::slurm {

// The job's state: from squeue while Slurm holds it, else from sacct (accounting), else from
// scontrol (a job that ended less than MinJobAge ago). kNotFound when none of them knows it.
Result<JobState> queryJob(const Where& where, const std::string& slurm_job_id);

// scancel: Slurm signals every step (the agents stop their ranks) and ends the job.
Status cancelJob(const Where& where, const std::string& slurm_job_id);

}  // namespace ringmaster::slurm

#pragma once
// A Slurm job's state as Ringmaster shows it, read from Slurm's own commands in formats that are
// stable from Debian's 22.05 to current releases (23.11-25.x):
//   squeue -h -o '%i|%T|%r'                                   (queued and recent jobs)
//   sacct -X -n --parsable2 -o JobID,State,ExitCode,Reason     (with accounting; any age)
//   scontrol -o show job ID                                    (recent jobs, without accounting)
// Parsing is pure: the callers run the commands (locally or over ssh to a login node).

#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/util/result.h"

namespace ringmaster::slurm {

enum class Phase {
  kPending,      // queued (the reason says why: Priority, Resources, ...), held, requeued
  kRunning,      // running, resizing, signaling, staging out
  kCompleting,   // over (or cancelled): Slurm is ending its processes; no longer "running"
  kSuspended,    // suspended or stopped by Slurm
  kCompleted,    // every step ended with 0
  kFailed,       // a non-zero exit, a failed boot, out of memory
  kCancelled,    // scancel (by anyone), revoked
  kPreempted,    // a higher-priority job took its nodes
  kTimedOut,     // its time limit or deadline passed
  kNodeFailure,  // one of its nodes failed
  kUnknown,      // a state this code does not know (a newer Slurm): shown as Slurm says it
};

// "pending", "running", ..., "timed out", "node failure"; "unknown" for kUnknown.
const char* phaseName(Phase phase);
// Whether Slurm is done with the job (it will not run again unless requeued by someone).
bool isFinished(Phase phase);

// The phase of a Slurm state name as squeue, sacct or scontrol print it: "RUNNING",
// "CANCELLED by 1000" (sacct), "OUT_OF_MEMORY", "PD" (a short code); case-sensitive, as Slurm.
Phase phaseOf(std::string_view slurm_state);

struct JobState {
  std::string job_id;       // "123", "123_4" (array task), "123+0" (het component)
  std::string slurm_state;  // as Slurm printed it, e.g. "CANCELLED by 1000"
  Phase phase = Phase::kUnknown;
  std::string reason;     // "Resources", "Priority", "NonZeroExitCode"; "" for None
  std::string exit_code;  // "3:0" (exit status:signal); "" when not known
};

// `squeue -h -o '%i|%T|%r'`: one job a line. Errors name the line.
Result<std::vector<JobState>> parseSqueue(std::string_view text);
// `sacct -X -n --parsable2 -o JobID,State,ExitCode,Reason`: jobs only (step lines such as
// "123.batch" are skipped when -X was not given).
Result<std::vector<JobState>> parseSacct(std::string_view text);
// `scontrol -o show job ID`: one line of Key=Value pairs (values may hold spaces).
Result<JobState> parseScontrolJob(std::string_view line);

}  // namespace ringmaster::slurm

#pragma once
// The history read per host and per GPU: in how many runs each one took part, how many of those
// failed or hung, how often its rank was the one that failed first, and the GPU faults seen under
// its ranks; and the outliers named — "GPU GPU-3f2c1a9e… on gpu07 was in 4 of the 5 failed runs;
// in 0 of 31 succeeded runs". Each run on its own looks like bad luck; read together, a flaky GPU
// is plain. `ringmasterctl hardware` and the app's Hardware view both show this.

#include <string>
#include <vector>

#include "ringmaster/store/reader.h"
#include "ringmaster/util/result.h"

namespace ringmaster::hardware {

// One attempt of a job, as the history has it: where its ranks ran and how it ended.
struct HardwareRun {
  std::string job_id, job_name;
  uint32_t attempt = 0;
  double time = 0;      // when the job was submitted (unix seconds)
  std::string outcome;  // "succeeded" | "failed" | "stopped" | "running"
  std::string failure;  // a failed attempt's cause kind: exited | signalled | hung | agent_lost…
  struct Place {
    std::string host;      // the agent
    std::string gpu_uuid;  // "" for a rank on the CPU
    std::string gpu_name;  // "NVIDIA H100 80GB HBM3", "" when unknown
    int gpu_index = -1;
  };
  std::vector<Place> places;  // one per rank
  int culprit = -1;           // index into places of the rank that failed first; -1 when none
  // Index into places of the rank that held the others back (straggler_history.h: its verdict
  // ratio at least kHeldBackRatio); -1 when none did or the run has one rank.
  int straggler = -1;
  double straggler_ratio = 0;  // that rank's ratio over the median rank
  struct Fault {
    int place = -1;    // index into places: the GPU it was seen on
    std::string kind;  // GpuFault::kind
    bool critical = false;
    std::string text;  // the event's detail
  };
  std::vector<Fault> faults;  // gpu_fault events of the attempt
};

// A host or a GPU over every run it took part in.
struct HardwareEntity {
  std::string kind;  // "host" | "gpu"
  std::string id;    // the agent's name | the GPU's UUID
  std::string host;  // the GPU's agent (the host itself for a host)
  std::string gpu_name;
  int gpu_index = -1;
  int runs = 0, failed = 0, succeeded = 0;  // attempts it took part in (stopped/running: runs only)
  int hangs = 0;         // failed attempts it took part in whose cause was a hang
  int failed_first = 0;  // failed attempts whose first failing rank was on it
  int critical_faults = 0, xids = 0, memory_faults = 0;  // gpu_fault events under its ranks
  // Runs of several ranks in which its rank held the others back, and by how much at most.
  int held_back = 0;
  double held_back_ratio = 0;
  std::vector<std::string> held_back_jobs;  // job ids of those runs, newest first, unique
  std::string last_fault;                   // the newest gpu_fault event's detail
  std::vector<std::string> failed_jobs;     // job ids of the failed attempts, newest first, unique
  // The chance of standing out this much by chance: of being in this many failed runs (one-sided
  // Fisher), of failing first this often given its share of those runs' ranks, or of holding the
  // others back this often given its share of the ranks of the runs someone did: the smallest.
  double p_value = 1;
  bool outlier = false;
};

struct HardwareOutlier {
  std::string text;   // one line: what stands out and why
  size_t entity = 0;  // index into HardwareReport::entities
};

struct HardwareReport {
  int runs = 0, failed = 0, succeeded = 0;
  std::vector<HardwareEntity> entities;   // hosts by name, then GPUs by host and index
  std::vector<HardwareOutlier> outliers;  // most suspicious first
};

// Runs out of the history: every attempt of every job submitted at or after `since` (unix
// seconds; 0: all), deleted jobs and a preflight's link tests left out, archived ones kept
// (their hardware still ran them).
Result<std::vector<HardwareRun>> hardwareRuns(store::Reader& history, double since = 0);

// The report over `runs`. An entity is an outlier when it was in at least 2 failed runs, or held
// the others back in at least 2 runs, and its p_value is under 1%; or when critical GPU faults
// were seen under its ranks. A host whose record one of its GPUs explains is not named again.
HardwareReport hardwareReport(const std::vector<HardwareRun>& runs);

// Whether an outlier is named for holding runs back (it is slow, not failing) rather than for
// its failures or faults.
bool namedAsSlow(const HardwareEntity& entity);

// An entity as a table row names it: the host's name, or "GPU 2 NVIDIA H100 80GB HBM3
// GPU-3f2c1a9e…" (a GPU known by index alone has no UUID to show).
std::string entityLabel(const HardwareEntity& entity);

// "GPU-3f2c1a9e…": a UUID short enough for a sentence, long enough to tell GPUs apart.
std::string shortGpuUuid(const std::string& uuid);

// The GPU a rank trained on, from its device text ("GPU 2 NVIDIA H100 80GB HBM3 (GPU-…)"):
// index, name and UUID; index -1 for "CPU…" or an empty device.
HardwareRun::Place placeOf(const std::string& host, const std::string& device);

}  // namespace ringmaster::hardware

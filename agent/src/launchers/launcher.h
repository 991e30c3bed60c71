#pragma once
// A launcher is one environment contract (DESIGN.md §6): what program each rank runs, the
// variables its framework reads beyond the common contract (env_contract.h), how the agent sees
// that a rank is ready and working, and how a failure reads. JobSupervisor asks the job's
// launcher and never switches on the kind itself; a new framework is a new implementation here.
//
// Thread-safety: implementations hold no state; launcherFor() returns shared immutable objects.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ringmaster/job/spec.h"
#include "ringmaster/protocol/ringmaster.pb.h"
#include "ringmaster/util/result.h"

namespace ringmaster::agent {

// Where the agent keeps a job, for launchers whose ranks read files it writes.
struct JobFiles {
  std::string worker_path;  // ringmaster-worker (native ranks)
  std::string job_dir;      // state_dir/jobs/<id>: spec.yaml, native.yaml
};

using EnvEntries = std::vector<std::pair<std::string, std::string>>;

class Launcher {
 public:
  virtual ~Launcher() = default;

  // How the device plan treats the ranks (job::planDevices: a GPU each, or every GPU visible).
  virtual job::Launcher kind() const = 0;
  // Checks of the launch that only this contract needs, beyond the supervisor's common ones.
  virtual Status validate(const proto::JobLaunch& launch) const;
  // The program and arguments of `rank`.
  virtual std::vector<std::string> argv(const proto::JobLaunch& launch,
                                        const proto::RankAssignment& rank,
                                        const JobFiles& files) const = 0;
  // The contract's own variables, set after the common contract and before the job's env.
  virtual Result<EnvEntries> environment(const proto::JobLaunch& launch,
                                         const proto::RankAssignment& rank) const;
  // Variables that tune the program the agent itself provides (never the user's).
  virtual void tune(std::vector<std::string>* env) const;
  // Readiness: whether ranks report their phase (setup, compute, ...) through
  // RINGMASTER_PHASE_FILE, so that progress says what a rank does before its first step.
  virtual bool reportsPhase() const { return false; }
  // A reason a person acts on, from the failed rank's last lines, when its exit code alone would
  // not say it (the interpreter lacks the framework); nullopt: the exit code says enough.
  // `interpreter` is what ran the entry point (describeInterpreter), empty when not Python.
  virtual std::optional<std::string> explainFailure(const std::vector<std::string>& tail,
                                                    const std::string& interpreter) const;
};

// The launcher of a contract; nullptr for an unknown kind (a newer client's).
const Launcher* launcherFor(proto::Launcher kind);

}  // namespace ringmaster::agent

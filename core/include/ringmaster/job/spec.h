#pragma once
// The job spec: a YAML file that says what to run, where, and how. parseJobSpec() validates the
// whole file at once and reports every problem it finds, each with its line, like a compiler.
//
// Thread safety: all functions are pure (no shared state) and may be called from any thread.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ringmaster/slurm/request.h"

namespace ringmaster::job {

enum class Launcher { kNative, kTorchrun, kCommand, kTensorflow, kDeepspeed };
enum class Backend { kAuto, kNccl, kGloo };

// The spelling used in spec files: "native", "torchrun", "command", "tensorflow", "deepspeed" /
// "auto", "nccl", "gloo".
inline constexpr size_t kMaxDescriptionBytes = 1000;

const char* launcherName(Launcher launcher);
const char* backendName(Backend backend);
// The inverse of launcherName() / backendName(); nullopt for anything else (case-sensitive).
std::optional<Launcher> parseLauncher(std::string_view name);
std::optional<Backend> parseBackend(std::string_view name);

struct PlacementEntry {
  std::string agent;
  int ranks = 0;
  int line = 0;  // 1-based line of the entry in the spec file; 0 when not from a file
};

struct MetricPatternSpec {
  std::string name;
  std::string regex;  // ECMAScript, at least one capture group; group 1 is the number
};

// `restart:` — what the job's agents do when an attempt fails (see DESIGN.md §3 "Failure").
struct RestartPolicy {
  int max_restarts = 0;             // attempts after the first; 0: a failure ends the job
  double backoff_seconds = 1;       // wait between a failed attempt's teardown and the next
  double hang_timeout_seconds = 0;  // no new step for this long: hung (0: from the step times)
  // warn | restart | fail; empty: restart for native jobs, warn for command and torchrun jobs
  // unless hang_timeout_seconds is set (see proto::RestartPolicy.on_hang).
  std::string on_hang;
  int min_nodes = 0;                  // fewest agents to go on with (0: every agent of the job)
  bool exclude_failed_hosts = false;  // leave the failed rank's host out of the next attempt
  double rejoin_timeout_seconds =
      60;  // lost agents that may come back (a network cut) get this long
};

// The spec's `tensorflow:` (launcher tensorflow): the roles of TF_CONFIG's cluster. Rank 0 is the
// chief when `chief` is set, the last `ps` ranks are parameter servers, every other rank a worker.
struct TensorflowRoles {
  bool chief = false;
  int ps = 0;
};

struct JobSpec {
  std::string name;         // required, [A-Za-z0-9._-]{1,64}
  std::string description;  // optional: what the job is, shown on its dashboard (<= 1000 bytes)
  Launcher launcher = Launcher::kCommand;  // required
  std::vector<std::string> command;        // argv; required (non-empty) but for native
  std::string workdir;                     // optional; an absolute path when given
  // optional `python:`: the interpreter that runs a command whose first word is a .py script
  // (torchrun runs scripts with its own interpreter). An absolute path, or a name looked up on
  // the rank's PATH; empty: torchrun, deepspeed and tensorflow jobs use the first `python3` on
  // the job's PATH, command jobs exec the script itself.
  std::string python;
  // Names match [A-Za-z_][A-Za-z0-9_]* and are never reserved (see isReservedEnvName()).
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<PlacementEntry> placement;  // either placement ...
  int world_size = 0;                     // ... or world_size; after parsing, the total rank count
  int world_size_line = 0;                // line of `world_size:` (0 when placement was used)
  // ... or `slurm:`: Slurm picks the nodes; world_size is nodes * ranksPerNode() (computed from
  // the spec alone: a cluster file's defaults, applied later, may change ranks per node).
  // placement stays empty and world_size_line 0. slurm->line is the line of the `slurm:` key.
  std::optional<slurm::SlurmRequest> slurm;
  Backend backend = Backend::kAuto;
  RestartPolicy restart;
  // From `metrics: {patterns: {loss: 'loss=([-+0-9.eE]+)'}}`, in file order.
  // The pattern named `step` sets the step.
  std::vector<MetricPatternSpec> metric_patterns;
  // The `native:` mapping re-emitted as YAML text; validated later by the native trainer.
  // Required when launcher is native, an error otherwise.
  std::string native_yaml;
  int native_line = 0;  // line of the `native:` key, to offset the native trainer's line numbers
  int stop_grace_seconds = 10;  // optional `stop_grace_seconds`, >= 0
  // Optional `tensorflow: {chief: true, ps: 1}`, only with launcher tensorflow; absent: every
  // rank is a worker (MultiWorkerMirroredStrategy's cluster).
  TensorflowRoles tensorflow;
  std::string file;  // the file name given
  std::string text;  // the whole file text
};

// One problem in a spec file.
struct SpecDiagnostic {
  std::string file;
  int line = 0;         // 1-based; 0 when unknown
  int column = 0;       // 1-based; 0 when unknown
  std::string field;    // dotted path, e.g. "placement[1].ranks", "env.FOO"; empty for the file
  std::string message;  // what is wrong and what was expected
  std::string hint;     // optional, e.g. "did you mean 'world_size'?"

  // "job.yaml:12:3: error: placement[1].ranks: expected ... (hint: ...)"
  std::string toString() const;
};

struct SpecParseResult {
  std::optional<JobSpec> spec;  // set exactly when errors is empty
  std::vector<SpecDiagnostic> errors;

  bool ok() const { return spec.has_value() && errors.empty(); }
};

// Parses and validates `text`; `file_name` is only used in diagnostics and JobSpec::file.
// Never throws.
SpecParseResult parseJobSpec(std::string_view text, std::string file_name);

// Reads `path` and parses it. A missing or unreadable file gives one diagnostic naming the file.
SpecParseResult loadJobSpec(const std::string& path);

// One diagnostic per line (each ending in '\n'), like a compiler.
std::string formatDiagnostics(const std::vector<SpecDiagnostic>& diagnostics);

// True for the variables Ringmaster sets for every rank (RANK, WORLD_SIZE, MASTER_ADDR, ...,
// TORCHELASTIC_*, RINGMASTER_*), which a spec may not set.
bool isReservedEnvName(std::string_view name);

// A command's first word names a Python script ("train.py"): it runs under an interpreter
// (the spec's `python:`, or python3 for torchrun, deepspeed and tensorflow).
bool isPythonScript(std::string_view program);

}  // namespace ringmaster::job

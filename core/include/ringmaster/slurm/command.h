#pragma once
// Runs Slurm's commands (sbatch, squeue, sacct, scancel) and the file reads a Slurm job needs:
// here, or on the cluster's login node through the user's own ssh (their keys and ~/.ssh/config,
// BatchMode: never a password prompt) when a login is given.
//
// Thread safety: no shared state; each call runs and waits for one process.

#include <string>
#include <vector>

#include "ringmaster/util/result.h"

namespace ringmaster::slurm {

struct CommandOutput {
  int exit_code = 0;  // 128 + N when killed by signal N
  std::string out;
  std::string err;
};

struct Where {
  std::string login;       // "[user@]host[:port]"; empty: this machine
  std::string ssh_config;  // ssh -F; empty: $RINGMASTER_SSH_CONFIG, else ssh's own
};

// Runs `argv` and waits up to `timeout_ms` (then kills it: kTimeout). `input` goes to its stdin.
// A program that cannot start is kNotFound naming it; a non-zero exit is not an error here (the
// caller reads exit_code and err), but ssh's own failure (exit 255: the login node unreachable,
// the key refused) is kUnavailable with ssh's words.
Result<CommandOutput> runCommand(const std::vector<std::string>& argv, const Where& where,
                                 int timeout_ms, const std::string& input = "");

// `script` run by sh with `args` as $1, $2, ... (never spliced into the script), here or on the
// login node; its standard output. A non-zero exit is kUnavailable with the script's stderr.
Result<std::string> runScript(const std::string& script, const std::vector<std::string>& args,
                              const Where& where, int timeout_ms, const std::string& input = "");

// `text` quoted for a POSIX shell ('...'), as ssh hands a command line to the remote shell.
std::string shellQuote(const std::string& text);

}  // namespace ringmaster::slurm

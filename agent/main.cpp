// ringmaster-agent: the daemon on every GPU host. Thin: flags in, AgentServer out.
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "agent_server.h"
#include "ringmaster/security/keys.h"
#include "ringmaster/slurm/job_dir.h"
#include "ringmaster/util/open_files.h"
#include "slurm_node.h"

using namespace ringmaster;

int main(int argc, char** argv) {
  // Before any thread exists, so every thread inherits the mask (signals come via signalfd).
  agent::blockAgentSignals();
  ::tzset();             // the time zone of log lines, read once before the ZAP thread logs too
  raiseOpenFileLimit();  // a thousand idle client connections
  // Log and journal reads build replies of up to 16 MiB (read, encoded, copied to libzmq). By
  // default glibc gives each its own mmap (its threshold grows only to the size of the last one
  // freed) and returns it at once, so every reply faulted in 12,000 fresh pages: 120-270 ms a
  // read on a 2-core AMD VM, during which no other request was taken in. From the heap, and
  // kept there up to 128 MiB, they reuse pages already faulted in: 25-40 ms.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);

  CLI::App app{"ringmaster-agent: runs training ranks for Ringmaster clients"};
  agent::AgentOptions options;
  app.add_option("--listen", options.listen, "endpoint to listen on, tcp://HOST:PORT")
      ->capture_default_str();
  app.add_option("--state-dir", options.state_dir, "keys, journal, job logs and checkpoints");
  app.add_option("--name", options.name, "agent name (default: host name)");
  app.add_option("--slots", options.slots, "ranks it runs at once (default: GPUs, else CPUs)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--health-interval-ms", options.health_interval_ms, "host health sampling period")
      ->check(CLI::Range(50, 3600000))
      ->capture_default_str();
  app.add_option("--gpus", options.gpus,
                 "GPUs ranks may use, indices or UUIDs: 0,2 (default: the CUDA_VISIBLE_DEVICES it "
                 "starts with, else all)");
  app.add_flag("--quiet", options.quiet, "no log lines on stderr");
  app.add_option("--run-as", options.run_as,
                 "user the ranks run as (for an agent run as root; default: the agent's user)");
  app.add_option("--job-uids", options.job_uids,
                 "FIRST-LAST: each job's ranks run as a uid of their own from this range, which "
                 "no user, group or process of the host uses (e.g. 1879048192-1879113727, the "
                 "installers' default; an agent run as root): jobs cannot signal each other's "
                 "ranks, open each other's files or find the last job's in /tmp");
  app.add_option("--job-processes", options.job_processes,
                 "with --job-uids: the processes and threads one job may have at once on this "
                 "host (its uid's RLIMIT_NPROC)")
      ->check(CLI::Range(16, 1 << 22))
      ->capture_default_str();
  app.add_option("--rank-open-files", options.rank_open_files, "the ranks' open-file limit")
      ->check(CLI::Range(64, 1 << 24))
      ->capture_default_str();
  app.add_option("--rank-metric-rate", options.rank_metric_rate,
                 "metric records a rank may journal a second (lines past it stay in its log)")
      ->check(CLI::Range(1.0, 1e7))
      ->capture_default_str();
  app.add_option(
         "--rank-nice", options.rank_nice,
         "the ranks' nice value: the app's local agent runs them at 10, so that ranks using "
         "every core leave the desktop responsive")
      ->check(CLI::Range(0, 19))
      ->capture_default_str();
  app.add_option("--nice", options.nice,
                 "the agent's own nice value, taken where it may (root or CAP_SYS_NICE): a "
                 "client's request then waits for a core behind neither ranks nor the host's "
                 "other processes (its ranks start at --rank-nice)")
      ->check(CLI::Range(-20, 19))
      ->capture_default_str();
  app.add_option("--rank-memory", options.rank_memory,
                 "each rank's memory limit, e.g. 64G (cgroup v2 with the memory controller "
                 "delegated to the agent; default: none)")
      ->transform(CLI::AsSizeValue(false));
  app.add_flag("--allow-loader-env", options.allow_loader_env,
               "let jobs set LD_PRELOAD, LD_AUDIT and LD_LIBRARY_PATH");
  // Any of these flags may also come from a file: `run-as = "ringmaster-jobs"`.
  app.set_config("--config", "", "agent config file (TOML: flag names without the dashes)");
  // A misspelt key (rank_memory for rank-memory) is an error, not a setting silently dropped.
  app.allow_config_extras(CLI::config_extras_mode::error);

  std::string state_dir;
  auto* pubkey = app.add_subcommand("pubkey", "print the agent's public key (creating it)");
  pubkey->add_option("--state-dir", state_dir, "state directory")->required();
  auto* rotate = app.add_subcommand(
      "rotate-key", "replace the agent's key pair (used from its next start; the old one is kept)");
  rotate->add_option("--state-dir", state_dir, "state directory")->required();
  auto* authorize = app.add_subcommand("authorize", "allow a client key to use this agent");
  std::string key, comment;
  authorize->add_option("--state-dir", state_dir, "state directory")->required();
  authorize->add_option("KEY,--key", key, "the client's public key (ringmasterctl keys)")
      ->required();
  authorize->add_option("--comment", comment, "note stored next to the key");
  std::string role_name = "admin";
  authorize
      ->add_option("--role", role_name,
                   "admin: everything; user: submits jobs, sees and stops its own only")
      ->check(CLI::IsMember({"admin", "user"}))
      ->capture_default_str();
  agent::SlurmNodeOptions slurm_node;
  auto* slurm = app.add_subcommand(
      "slurm-node", "run one node's share of a Slurm job (a task of srun, from its batch script)");
  slurm->add_option("--job-dir", slurm_node.job_dir, "the job's directory")->required();
  slurm->add_option("--bind", slurm_node.bind,
                    "address to listen on and give the other nodes (default: the host's)");
  slurm->add_option("--ranks-per-node", slurm_node.ranks_per_node, "ranks this node runs")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  slurm
      ->add_option("--peers-timeout", slurm_node.peers_timeout_seconds,
                   "seconds to wait for the other nodes' agents")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  // A Z85 key may begin with '-', which would read as an option: pass such a key as --key=KEY.
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size() && args[i] != "--"; ++i) {
    if (args[i].rfind('-', 0) == 0 && security::isValidKey(args[i])) args[i] = "--key=" + args[i];
  }
  std::vector<char*> arg_pointers;
  for (auto& arg : args) arg_pointers.push_back(arg.data());
  CLI11_PARSE(app, argc, arg_pointers.data());

  if (*pubkey) {
    auto pair = security::loadOrCreateKeyPair(agent::agentKeyPath(state_dir));
    if (!pair.isOk()) {
      std::fprintf(stderr, "ringmaster-agent: %s\n", pair.status().message().c_str());
      return 1;
    }
    std::printf("%s\n", pair->public_key.c_str());
    // On stderr, so that `$(ringmaster-agent pubkey ...)` stays the key alone: what the app's
    // "Add agent" dialog shows to compare by eye.
    std::fprintf(stderr, "fingerprint %s\n", security::keyFingerprint(pair->public_key).c_str());
    return 0;
  }
  if (*rotate) {
    auto pair = security::rotateKeyPair(agent::agentKeyPath(state_dir));
    if (!pair.isOk()) {
      std::fprintf(stderr, "ringmaster-agent: %s\n", pair.status().message().c_str());
      return 1;
    }
    std::printf("%s\n", pair->public_key.c_str());
    // A running agent keeps its key until it restarts (its running jobs' ranks and peers hold
    // it): restarting ends those jobs, so rotate between jobs.
    std::fprintf(stderr,
                 "fingerprint %s\nthe old key pair is in %s.previous\nrestart the agent to "
                 "use the new key (its running jobs end), then give clients the new key: the "
                 "app's cluster view shows the agent as 'server-key mismatch' until then\n",
                 security::keyFingerprint(pair->public_key).c_str(),
                 agent::agentKeyPath(state_dir).c_str());
    return 0;
  }
  if (*authorize) {
    const security::Role role = *security::parseRole(role_name);
    security::AuthorizeOutcome outcome{};
    Status status =
        security::authorizeKey(agent::authorizedKeysPath(state_dir), key, role, comment, &outcome);
    if (!status.isOk()) {
      std::fprintf(stderr, "ringmaster-agent: %s\n", status.message().c_str());
      return 2;
    }
    const char* done = outcome == security::AuthorizeOutcome::kAdded ? "authorized as"
                       : outcome == security::AuthorizeOutcome::kRoleChanged
                           ? "now has role"
                           : "was already authorized as";
    std::printf("%s %s %s in %s\n", key.c_str(), done, security::roleName(role),
                agent::authorizedKeysPath(state_dir).c_str());
    return 0;
  }
  if (*slurm) {
    slurm_node.quiet = options.quiet;
    auto end = agent::runSlurmNode(slurm_node);
    if (!end.isOk()) {
      std::fprintf(stderr, "ringmaster-agent slurm-node: %s\n", end.status().message().c_str());
      return 1;
    }
    // The batch script waits for Slurm to end the job itself after this code (requeued when
    // preempted, timed out, cancelled) instead of ending it as completed.
    return *end == agent::SlurmNodeEnd::kStoppedBySignal ? slurm::kNodeStoppedBySignalExitCode : 0;
  }
  if (options.state_dir.empty()) {
    std::fprintf(stderr, "ringmaster-agent: --state-dir is required\n%s", app.help().c_str());
    return 2;
  }
  agent::takeAgentNice(options.nice);  // before AgentServer's threads, which inherit it
  auto server = agent::AgentServer::create(options);
  if (!server.isOk()) {
    std::fprintf(stderr, "ringmaster-agent: %s\n", server.status().message().c_str());
    return 1;
  }
  std::printf("agent %s\nendpoint %s\npublic-key %s\n", (*server)->name().c_str(),
              (*server)->endpoint().c_str(), (*server)->publicKey().c_str());
  std::fflush(stdout);
  Status status = (*server)->run();
  if (!status.isOk()) {
    std::fprintf(stderr, "ringmaster-agent: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}

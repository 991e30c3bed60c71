// ringmasterctl: the command-line client. Thin: flags in, ctl commands out.
#include <CLI/CLI.hpp>

#include "ctl.h"
#include "ringmaster/store/reader.h"

using namespace ringmaster::ctl;

int main(int argc, char** argv) {
  CLI::App app{"ringmasterctl: submit and follow data-parallel training jobs on Ringmaster agents"};
  app.require_subcommand(1);
  app.fallthrough();
  Globals globals;
  app.add_option("--cluster", globals.cluster_file,
                 "cluster file (default $RINGMASTER_CLUSTER or ~/.config/ringmaster/cluster.yaml)");
  app.add_option("--db", globals.db_file,
                 "history DB (default $RINGMASTER_DB or ~/.local/share/ringmaster/history.db)");

  auto* cluster = app.add_subcommand("cluster", "add or remove an agent of the cluster file");
  cluster->require_subcommand(1);
  ClusterAddFlags add_flags;
  auto* cluster_add =
      cluster->add_subcommand("add", "add an agent (or, with --replace, update it)");
  cluster_add->add_option("NAME", add_flags.name, "the agent's name")->required();
  cluster_add->add_option("ENDPOINT", add_flags.endpoint, "tcp://HOST:PORT")->required();
  // An option, not a positional: a Z85 key may begin with '-'. Write --key=KEY.
  cluster_add->add_option("--key", add_flags.server_key, "the agent's public key (pubkey)")
      ->required();
  cluster_add->add_flag("--replace", add_flags.replace, "replace an agent of the same name");
  std::string remove_name;
  auto* cluster_remove = cluster->add_subcommand("remove", "remove an agent");
  cluster_remove->add_option("NAME", remove_name, "the agent's name")->required();

  auto* keys = app.add_subcommand("keys", "print this client's public key (for agents' authorize)");
  bool json = false;
  auto* agents = app.add_subcommand("agents", "agents' status, inventory and latest health");
  std::vector<std::string> agent_names;
  agents->add_option("AGENT", agent_names, "only these agents (exit 1 unless all answer)");
  agents->add_flag("--json", json, "JSON output");

  SubmitFlags submit_flags;
  auto* submit = app.add_subcommand("submit", "submit a job; prints its id on the first line");
  submit->add_option("JOB", submit_flags.spec_path, "job spec (YAML)")->required();
  submit->add_flag("--wait", submit_flags.wait,
                   "wait for the end; exit 0 only if every rank succeeded");
  submit->add_flag("--follow", submit_flags.follow,
                   "stream every rank's log until the end (implies --wait)");
  submit->add_option("--slurm", submit_flags.slurm,
                     "run on this Slurm cluster of the cluster file (queued with sbatch)");
  submit->add_option("--nodes", submit_flags.nodes, "nodes to ask Slurm for (with --slurm)")
      ->check(CLI::Range(1, 100000));
  submit->add_flag("--dry-run", submit_flags.dry_run,
                   "print the Slurm batch script and submit nothing");
  submit
      ->add_option("--agent-timeout", submit_flags.agent_timeout_s,
                   "seconds an agent has to answer each step (capacity, prepare, launch); past it "
                   "the agents still awaited are named every 2 s (default 10)")
      ->check(CLI::Range(0.1, 3600.0));
  submit
      ->add_option("--agent-wait", submit_flags.agent_wait_s,
                   "seconds a step waits in all for an agent that is alive but busy (its "
                   "connection stays up) before the submit fails naming it (default 120)")
      ->check(CLI::Range(0.0, 86400.0));

  std::string job;
  auto* status = app.add_subcommand("status", "per-rank state of a job (default: running jobs)");
  status->add_option("JOB", job, "job id or unique prefix");
  status->add_flag("--json", json, "JSON output");

  LogsFlags logs_flags;
  auto* logs = app.add_subcommand("logs", "a job's logs");
  logs->add_option("JOB", logs_flags.job, "job id or unique prefix")->required();
  logs->add_option("--rank", logs_flags.rank, "only this rank (raw output)");
  logs->add_flag("--follow,-f", logs_flags.follow, "keep streaming until the ranks exit");
  logs->add_option("--attempt", logs_flags.attempt,
                   "the logs of this attempt (1 is the first; default: the newest)")
      ->check(CLI::PositiveNumber);
  logs->add_option("--stream", logs_flags.stream,
                   "only what the ranks wrote to stdout, or to stderr (default: both, as they "
                   "came)")
      ->check(CLI::IsMember({"stdout", "stderr"}));

  MetricsFlags metrics_flags;
  auto* metrics =
      app.add_subcommand("metrics", "a job's metrics (csv: job,attempt,rank,step,name,value,time)");
  metrics->add_option("JOB", metrics_flags.job, "job id or unique prefix")->required();
  metrics->add_option("--rank", metrics_flags.rank, "only this rank");
  metrics->add_option("--name", metrics_flags.name, "only this metric");
  metrics->add_option("--format", metrics_flags.format, "csv or json")->capture_default_str();

  StopFlags stop_flags;
  auto* stop = app.add_subcommand("stop", "stop a job on every agent (SIGTERM, then SIGKILL)");
  stop->add_option("JOB", stop_flags.job, "job id or unique prefix")->required();
  stop->add_flag("--wait", stop_flags.wait,
                 "return once every rank has ended (exit 1 if some still run at --timeout)");
  stop->add_option("--timeout", stop_flags.timeout_s, "seconds --wait waits at most")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);

  RestartFlags restart_flags;
  auto* restart = app.add_subcommand(
      "restart", "restart a running or failed job from its newest checkpoint (a new attempt)");
  restart->add_option("JOB", restart_flags.job, "job id or unique prefix")->required();
  auto* restart_rank =
      restart->add_option("--rank", restart_flags.rank, "the rank that prompted it (its host)");
  auto* restart_agent =
      restart->add_option("--agent", restart_flags.agent, "the agent that prompted it");
  restart_rank->excludes(restart_agent);
  restart->add_flag("--exclude", restart_flags.exclude,
                    "leave that rank's or agent's host out of the next attempt");

  std::string kill_job;
  int kill_rank = 0;
  auto* kill = app.add_subcommand(
      "kill",
      "a crash drill: SIGKILL to one rank of a running job, which fails as a crash would "
      "(and restarts from its checkpoint if restart.max_restarts allows)");
  kill->add_option("JOB", kill_job, "job id or unique prefix")->required();
  kill->add_option("--rank", kill_rank, "the rank to kill")
      ->required()
      ->check(CLI::NonNegativeNumber);

  bool with_archived = false, with_link_tests = false;
  auto* runs = app.add_subcommand("runs", "every job in the history");
  runs->add_flag("--json", json, "JSON output");
  runs->add_flag("--archived", with_archived, "list archived runs too (marked as archived)");
  runs->add_flag("--link-tests", with_link_tests,
                 "list the cluster preflight's link tests too (preflight-link-A-B jobs)");

  auto* sync = app.add_subcommand("sync", "pull everything the agents have that the history lacks");

  PreflightFlags preflight_flags;
  auto* preflight = app.add_subcommand(
      "preflight",
      "check the cluster before a job meets a bad host: CPU, memory, free disk, clock offset and "
      "GPU faults of each agent, and the link between every pair (a 2-rank Gloo test each, in "
      "rounds); exit 1 when a problem is named");
  preflight->add_option("AGENTS", preflight_flags.agents, "the agents to check (default: all)");
  preflight->add_flag("--json", preflight_flags.json, "JSON output");
  preflight->add_flag("--no-links", preflight_flags.no_links, "skip the link tests");
  preflight->add_flag("--history", preflight_flags.history,
                      "list the checks kept in the history, newest first (no agent is asked)");
  preflight->add_option("--show", preflight_flags.show,
                        "print a kept check again: its number (see --history) or 'last'");

  std::optional<double> since_days;
  auto* hardware = app.add_subcommand(
      "hardware",
      "every host and GPU over the history's runs: failures, who failed first, hangs, GPU "
      "faults, and the hosts or GPUs that stand out");
  hardware->add_flag("--json", json, "JSON output");
  hardware->add_option("--since", since_days, "only runs submitted in the last DAYS days")
      ->check(CLI::PositiveNumber);

  std::string demo_spec;
  auto* demo = app.add_subcommand("demo", "run the demo job on an embedded local agent, live");
  demo->add_option("--spec", demo_spec, "another job spec to run instead of the bundled demo");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the help, or the error and a hint; a flag or argument it refuses is bad input
    // (exit 2, as a bad job spec is), not one of CLI11's own codes (106, 109, ...).
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  }

  const int rc = [&] {
    if (*cluster_add) return runClusterAdd(globals, add_flags);
    if (*cluster_remove) return runClusterRemove(globals, remove_name);
    if (*keys) return runKeys(globals);
    if (*agents) return runAgents(globals, agent_names, json);
    if (*submit) return runSubmit(globals, submit_flags);
    if (*status) return runStatus(globals, job, json);
    if (*logs) return runLogs(globals, logs_flags);
    if (*metrics) return runMetrics(globals, metrics_flags);
    if (*stop) return runStop(globals, stop_flags);
    if (*restart) return runRestart(globals, restart_flags);
    if (*kill) return runKill(globals, kill_job, kill_rank);
    if (*runs) return runRuns(globals, json, with_archived, with_link_tests);
    if (*sync) return runSync(globals);
    if (*hardware) return runHardware(globals, json, since_days);
    if (*preflight) return runPreflightCommand(globals, preflight_flags);
    if (*demo) return runDemo(globals, demo_spec);
    return kExitBadInput;
  }();
  // Whatever the command read from a damaged history may be incomplete: said last, where it is
  // seen, and not exit 0.
  const std::vector<std::string> damaged = ringmaster::store::damagedHistories();
  for (const std::string& damage : damaged) printError("warning: " + damage);
  return rc == kExitOk && !damaged.empty() ? kExitFailure : rc;
}

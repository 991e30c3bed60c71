#include "ringmaster/client/slurm_submit.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ringmaster/security/keys.h"
#include "ringmaster/slurm/command.h"
#include "ringmaster/util/wall_clock.h"

namespace ringmaster::client {
namespace {

constexpr int kSbatchTimeoutMs = 60000;

// How long before the time limit Slurm signals the ranks: the job's stop grace, with room to
// checkpoint and exit.
int signalLeadSeconds(const job::JobSpec& spec) { return spec.stop_grace_seconds + 30; }

std::string batchScript(const SlurmSubmission& plan, const job::JobSpec& spec,
                        const SlurmCluster& cluster, const std::string& agent_program) {
  const slurm::SlurmRequest& r = plan.request;
  std::string s = "#!/bin/bash\n";
  s +=
      "# Ringmaster job " + plan.job_id + ", written by ringmasterctl submit and kept in its job\n";
  s += "# directory. Submitted with: ";
  for (const auto& arg : plan.sbatch) s += slurm::shellQuote(arg) + " ";
  s.pop_back();
  s += "\n#SBATCH --job-name=" + spec.name + "\n";
  s += "#SBATCH --nodes=" + std::to_string(r.nodes) + "\n";
  s += "#SBATCH --ntasks-per-node=1\n";
  if (r.gpus_per_node > 0) s += "#SBATCH --gpus-per-node=" + std::to_string(r.gpus_per_node) + "\n";
  for (const auto& [flag, value] : {std::pair{"partition", r.partition},
                                    {"account", r.account},
                                    {"qos", r.qos},
                                    {"time", r.time},
                                    {"constraint", r.constraint}}) {
    if (!value.empty()) s += std::string("#SBATCH --") + flag + "=" + value + "\n";
  }
  // Every run of a requeued job appends to the same file, which says why an agent never came up.
  s += "#SBATCH --output=" + plan.dir.root + "/slurm-%j.out\n";
  s += "#SBATCH --open-mode=append\n";
  // A node that fails, or preemption, makes Slurm run the job again; it resumes from its
  // checkpoints.
  s += "#SBATCH --requeue\n";
  // Before the time limit every process of the step gets SIGTERM: the ranks can checkpoint.
  const int lead = signalLeadSeconds(spec);
  s += "#SBATCH --signal=TERM@" + std::to_string(lead) + "\n";
  s += "\n# One agent per node starts that node's ranks and exits when the job is over. An agent\n"
       "# that fails ends the step, and with it the job.\n";
  s += "srun --kill-on-bad-exit=1 --ntasks-per-node=1 --cpu-bind=none " +
       slurm::shellQuote(agent_program) + " slurm-node --job-dir " +
       slurm::shellQuote(plan.dir.root) + " --ranks-per-node " +
       std::to_string(slurm::ranksPerNode(r));
  if (!cluster.bind.empty()) s += " --bind " + slurm::shellQuote(cluster.bind);
  s += "\nstatus=$?\n";
  // Ending now would make the job COMPLETED. Slurm's signal may come up to 60 s before its lead.
  s += "# " + std::to_string(slurm::kNodeStoppedBySignalExitCode) +
       ": Slurm's SIGTERM stopped the agents (scancel, preemption, the time limit). Slurm ends\n"
       "# the job itself in a moment, as cancelled, requeued or timed out.\n";
  s += "if [ $status -eq " + std::to_string(slurm::kNodeStoppedBySignalExitCode) +
       " ]; then sleep " + std::to_string(lead + 90) + "; fi\n";
  return s + "exit $status\n";
}

Status writeFile(const std::string& path, const std::string& text, std::filesystem::perms perms) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) return ioError("cannot write " + path);
  }
  std::error_code ec;
  std::filesystem::permissions(path, perms, ec);
  return Status::ok();
}

// The job directory, all but Slurm's id, written at `dir` (plan.dir, or a local copy that is
// shipped to the login node). The directory and its secrets are the user's alone.
Status writeJobDir(const SlurmSubmission& plan, const job::JobSpec& spec,
                   const security::KeyPair& client_keys, const slurm::JobDir& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir.root, ec);
  if (ec) return ioError("cannot create the job directory " + dir.root + ": " + ec.message());
  fs::permissions(dir.root, fs::perms::owner_all, ec);

  proto::JobLaunch launch = baseLaunch(spec, plan.job_id);
  RM_ASSIGN_OR_RETURN(security::KeyPair job_keys, security::generateKeyPair());
  launch.set_rendezvous_public_key(job_keys.public_key);
  launch.set_rendezvous_secret_key(job_keys.secret_key);
  launch.set_owner(client_keys.public_key);
  if (plan.request.gpus_per_node == 0 && spec.backend != job::Backend::kNccl) {
    launch.set_cpu_reason("the job asks Slurm for no GPUs (slurm.gpus_per_node is 0)");
  }
  const auto secret = fs::perms::owner_read | fs::perms::owner_write;
  RM_RETURN_IF_ERROR(writeFile(dir.launchFile(), launch.SerializeAsString(), secret));
  RM_RETURN_IF_ERROR(security::loadOrCreateKeyPair(dir.keyFile()).status());
  RM_RETURN_IF_ERROR(security::authorizeKey(dir.authorizedKeysFile(), client_keys.public_key,
                                            security::Role::kAdmin, "submitted the job"));
  RM_RETURN_IF_ERROR(writeFile(dir.root + "/spec.yaml", spec.text, secret));
  return writeFile(dir.scriptFile(), plan.script, fs::perms::owner_all);
}

// The job directory written here in a temporary directory, then unpacked on the login node by
// tar over one ssh command.
Status writeRemoteJobDir(const SlurmSubmission& plan, const job::JobSpec& spec,
                         const security::KeyPair& client_keys, const slurm::Where& where) {
  namespace fs = std::filesystem;
  std::string pattern = (fs::temp_directory_path() / "ringmaster-submit-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) return ioError("cannot create a directory in /tmp");
  struct RemoveAfter {
    std::string dir;
    ~RemoveAfter() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } local{pattern};
  RM_RETURN_IF_ERROR(
      writeJobDir(plan, spec, client_keys, slurm::JobDir{local.dir + "/" + plan.job_id}));
  RM_ASSIGN_OR_RETURN(
      slurm::CommandOutput tar,
      slurm::runCommand({"tar", "-C", local.dir, "-cf", "-", plan.job_id}, {}, kSbatchTimeoutMs));
  if (tar.exit_code != 0) return ioError("tar of the job directory failed: " + tar.err);
  const Status shipped = slurm::runScript("umask 077 && mkdir -p \"$1\" && tar -C \"$1\" -xf -",
                                          {fs::path(plan.dir.root).parent_path().string()}, where,
                                          kSbatchTimeoutMs, tar.out)
                             .status();
  if (!shipped.isOk()) {
    return Status(shipped.code(),
                  "cannot write the job directory " + plan.dir.root + ": " + shipped.message());
  }
  return Status::ok();
}

}  // namespace

Result<SlurmSubmission> planSlurmSubmission(const job::JobSpec& spec, const SlurmCluster& cluster,
                                            const std::string& job_id,
                                            const std::string& agent_program) {
  if (!spec.slurm) return invalidArgument(spec.file + ": the job has no slurm: section");
  SlurmSubmission plan;
  plan.job_id = job_id;
  plan.request = slurm::withDefaults(*spec.slurm, cluster.defaults);
  plan.request.cluster = cluster.name;
  // #SBATCH lines cannot quote: a space would cut the path short.
  if (cluster.job_dir.find_first_of(" \t\r\n") != std::string::npos) {
    return invalidArgument("slurm cluster '" + cluster.name + "': job_dir '" + cluster.job_dir +
                           "' contains a space, which #SBATCH --output cannot hold");
  }
  plan.dir.root = cluster.job_dir + "/" + job_id;
  if (spec.backend == job::Backend::kNccl && plan.request.gpus_per_node == 0) {
    return invalidArgument(spec.file +
                           ": backend nccl needs GPUs: set slurm.gpus_per_node (one per rank)");
  }
  if (spec.restart.min_nodes > plan.request.nodes) {
    return invalidArgument("restart.min_nodes is " + std::to_string(spec.restart.min_nodes) +
                           " but the job asks Slurm for " + std::to_string(plan.request.nodes) +
                           " node(s)");
  }
  plan.sbatch = {"sbatch", "--parsable"};
  plan.sbatch.insert(plan.sbatch.end(), plan.request.sbatch_args.begin(),
                     plan.request.sbatch_args.end());
  plan.sbatch.push_back(plan.dir.scriptFile());
  plan.script =
      batchScript(plan, spec, cluster, cluster.agent.empty() ? agent_program : cluster.agent);
  return plan;
}

Result<SlurmSubmission> submitToSlurm(ClusterClient& client, const job::JobSpec& spec,
                                      const SlurmCluster& cluster,
                                      const std::string& agent_program) {
  if (!cluster.login.empty() && cluster.agent.empty()) {
    return invalidArgument("slurm cluster '" + cluster.name +
                           "' submits through its login node: give its agent: (the path of "
                           "ringmaster-agent that the compute nodes see)");
  }
  RM_ASSIGN_OR_RETURN(SlurmSubmission plan,
                      planSlurmSubmission(spec, cluster, newJobId(spec.name), agent_program));
  // The cluster's defaults may set the ranks per node that the spec left unset.
  job::JobSpec effective = spec;
  effective.world_size = plan.request.nodes * slurm::ranksPerNode(plan.request);
  const slurm::Where where{cluster.login, ""};
  if (where.login.empty()) {
    RM_RETURN_IF_ERROR(writeJobDir(plan, effective, client.keys(), plan.dir));
  } else {
    RM_RETURN_IF_ERROR(writeRemoteJobDir(plan, effective, client.keys(), where));
  }
  RM_ASSIGN_OR_RETURN(slurm::CommandOutput sbatch,
                      slurm::runCommand(plan.sbatch, where, kSbatchTimeoutMs));
  // --parsable: "ID" or "ID;CLUSTER".
  plan.slurm_job_id = sbatch.out.substr(0, sbatch.out.find_first_of(";\n"));
  if (sbatch.exit_code != 0 || plan.slurm_job_id.empty() ||
      plan.slurm_job_id.find_first_not_of("0123456789") != std::string::npos) {
    static_cast<void>(
        slurm::runScript("rm -rf -- \"$1\"", {plan.dir.root}, where, kSbatchTimeoutMs));
    std::string why = sbatch.err.empty() ? sbatch.out : sbatch.err;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return Status(ErrorCode::kUnavailable,
                  "sbatch refused the job on slurm cluster '" + cluster.name + "': " + why);
  }
  RM_RETURN_IF_ERROR(slurm::runScript("printf '%s\\n' \"$2\" > \"$1\"",
                                      {plan.dir.slurmJobIdFile(), plan.slurm_job_id}, where,
                                      kSbatchTimeoutMs)
                         .status());

  RM_ASSIGN_OR_RETURN(store::BatchWriter * history, client.writer());
  store::JobRow row;
  row.job_id = plan.job_id;
  row.name = spec.name;
  row.launcher = job::launcherName(spec.launcher);
  row.spec_yaml = spec.text;
  row.world_size = effective.world_size;
  row.attempt = 1;
  row.submitted_at = unixSeconds();
  history->enqueueWrite([row](store::Writer& s) { return s.recordSubmission(row); });
  store::SlurmJobRow slurm_row;
  slurm_row.job_id = plan.job_id;
  slurm_row.cluster = cluster.name;
  slurm_row.job_dir = plan.dir.root;
  slurm_row.slurm_job_id = plan.slurm_job_id;
  slurm_row.state = "PENDING";
  slurm_row.updated_at = unixSeconds();
  history->enqueueWrite([slurm_row](store::Writer& s) { return s.recordSlurmJob(slurm_row); });
  RM_RETURN_IF_ERROR(history->flush());
  return plan;
}

Status useSlurm(job::JobSpec* spec, const std::string& cluster, int nodes) {
  if (nodes < 1) return invalidArgument("--nodes must be at least 1");
  slurm::SlurmRequest request = spec->slurm.value_or(slurm::SlurmRequest{});
  request.cluster = cluster;
  if (!spec->slurm) {  // a spec for agents: its ranks spread evenly over the nodes
    if (spec->world_size % nodes != 0) {
      return invalidArgument(spec->file + ": " + std::to_string(spec->world_size) +
                             " ranks do not divide among " + std::to_string(nodes) +
                             " nodes: give a --nodes that divides them, or a slurm: section");
    }
    request.ranks_per_node = spec->world_size / nodes;
  }
  request.nodes = nodes;
  spec->world_size = nodes * slurm::ranksPerNode(request);
  spec->slurm = request;
  spec->placement.clear();
  return Status::ok();
}

Result<SlurmCluster> findSlurmCluster(const std::vector<SlurmCluster>& clusters,
                                      const std::string& name, const std::string& cluster_file) {
  if (name.empty()) {
    if (clusters.size() == 1) return clusters.front();
    return invalidArgument(clusters.empty()
                               ? cluster_file + " has no slurm: clusters"
                               : "name the slurm cluster (slurm.cluster, or --slurm NAME): " +
                                     cluster_file + " has " + std::to_string(clusters.size()));
  }
  std::string known;
  for (const auto& cluster : clusters) {
    if (cluster.name == name) return cluster;
    known += (known.empty() ? "" : ", ") + cluster.name;
  }
  return notFound("no slurm cluster '" + name + "' in " + cluster_file +
                  (known.empty() ? " (it has none)" : " (it has: " + known + ")"));
}

std::string slurmLoginOf(const std::string& cluster_file, const std::string& cluster) {
  auto clusters = loadSlurmClusters(cluster_file);
  if (!clusters.isOk()) return "";
  auto found = findSlurmCluster(*clusters, cluster, cluster_file);
  return found.isOk() ? found->login : "";
}

}  // namespace ringmaster::client

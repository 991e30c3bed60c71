#include "env_contract.h"

#include <string_view>
#include <unordered_map>

#include "ringmaster/security/keys.h"

namespace ringmaster::agent {
namespace {

// KEY=VALUE entries in order, each name once.
class Environment {
 public:
  void set(std::string_view name, std::string_view value) {
    std::string entry;
    entry.reserve(name.size() + 1 + value.size());
    entry.append(name).append("=").append(value);
    auto [it, inserted] = index_.try_emplace(std::string(name), entries_.size());
    if (inserted) {
      entries_.push_back(std::move(entry));
    } else {
      entries_[it->second] = std::move(entry);
    }
  }
  void set(std::string_view name, long long value) { set(name, std::to_string(value)); }
  bool has(const std::string& name) const { return index_.count(name) != 0; }

  std::vector<std::string> release() && { return std::move(entries_); }

 private:
  std::vector<std::string> entries_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace

Result<security::KeyPair> rendezvousCredential(const proto::JobLaunch& job) {
  if (job.rendezvous_endpoint().empty()) return notFound("job has no rendezvous store");
  return security::attemptKeyPair({job.rendezvous_public_key(), job.rendezvous_secret_key()},
                                  job.attempt());
}

std::vector<std::string> buildRankEnvironment(const proto::JobLaunch& job,
                                              const proto::RankAssignment& rank,
                                              const RankContext& ctx,
                                              const std::vector<std::string>& base_env) {
  Environment env;
  for (const std::string& entry : base_env) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env.set(std::string_view(entry).substr(0, eq), std::string_view(entry).substr(eq + 1));
  }
  bool job_sets_omp = false;
  bool job_sets_unbuffered = false;
  bool job_sets_device_order = false;
  for (const proto::EnvVar& var : job.env()) {
    job_sets_omp = job_sets_omp || var.name() == "OMP_NUM_THREADS";
    job_sets_unbuffered = job_sets_unbuffered || var.name() == "PYTHONUNBUFFERED";
    job_sets_device_order = job_sets_device_order || var.name() == "CUDA_DEVICE_ORDER";
  }

  // torchrun's contract.
  env.set("RANK", rank.rank());
  env.set("LOCAL_RANK", rank.local_rank());
  env.set("WORLD_SIZE", job.world_size());
  env.set("LOCAL_WORLD_SIZE", job.ranks_size());
  env.set("GROUP_RANK", job.group_rank());
  env.set("GROUP_WORLD_SIZE", job.group_world_size());
  env.set("ROLE_RANK", rank.rank());
  env.set("ROLE_NAME", "default");
  env.set("ROLE_WORLD_SIZE", job.world_size());
  env.set("MASTER_ADDR", job.master_addr());
  env.set("MASTER_PORT", job.master_port());
  env.set("TORCHELASTIC_RESTART_COUNT", job.attempt() > 0 ? job.attempt() - 1 : 0);
  env.set("TORCHELASTIC_MAX_RESTARTS", job.max_restarts());
  env.set("TORCHELASTIC_RUN_ID", job.job_id());
  if (!ctx.error_file.empty()) env.set("TORCHELASTIC_ERROR_FILE", ctx.error_file);
  // The agent's own PWD would name the directory it was started in.
  if (!ctx.workdir.empty()) env.set("PWD", ctx.workdir);
  // One OpenMP thread per rank unless told otherwise: N ranks x all cores oversubscribes the host.
  if (!job_sets_omp && !env.has("OMP_NUM_THREADS")) env.set("OMP_NUM_THREADS", "1");
  if (ctx.cuda_visible_devices) env.set("CUDA_VISIBLE_DEVICES", *ctx.cuda_visible_devices);
  if (!job_sets_device_order && !env.has("CUDA_DEVICE_ORDER")) {
    env.set("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
  }
  // NCCL errors then abort the process instead of hanging the collective forever.
  env.set("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
  env.set("NCCL_ASYNC_ERROR_HANDLING", "1");  // its name before torch 2.2 (Debian's is 1.13)

  env.set("RINGMASTER_JOB_ID", job.job_id());
  env.set("RINGMASTER_ATTEMPT", job.attempt());
  env.set("RINGMASTER_RANK", rank.rank());
  env.set("RINGMASTER_CHECKPOINT_DIR", ctx.checkpoint_dir);
  if (!ctx.phase_file.empty()) env.set("RINGMASTER_PHASE_FILE", ctx.phase_file);
  if (!job.host_address().empty()) env.set("RINGMASTER_HOST_ADDRESS", job.host_address());
  // The job's rendezvous store on rank 0's agent and this attempt's credential to reach it (the
  // job's own key pair stays with the agents; the secret half is in a file).
  auto credential = rendezvousCredential(job);
  if (credential.isOk() && !ctx.rendezvous_key_file.empty()) {
    env.set("RINGMASTER_RENDEZVOUS_ENDPOINT", job.rendezvous_endpoint());
    env.set("RINGMASTER_RENDEZVOUS_SERVER_KEY", job.rendezvous_server_key());
    env.set("RINGMASTER_RENDEZVOUS_PUBLIC_KEY", credential->public_key);
    env.set("RINGMASTER_RENDEZVOUS_SECRET_KEY_FILE", ctx.rendezvous_key_file);
  }
  if (!job_sets_unbuffered && !env.has("PYTHONUNBUFFERED")) env.set("PYTHONUNBUFFERED", "1");
  for (const auto& [name, value] : ctx.launcher_env) env.set(name, value);

  for (const proto::EnvVar& var : job.env()) {
    if (var.name().empty() || var.name().find('=') != std::string::npos) continue;
    env.set(var.name(), var.value());
  }
  env.set("RINGMASTER_AGENT_DIR", ctx.agent_dir);
  return std::move(env).release();
}

}  // namespace ringmaster::agent

#pragma once
// The environment each rank process starts with (DESIGN.md §6): torchrun's variables, so that
// scripts written for torchrun run unchanged, plus Ringmaster's own.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ringmaster/protocol/ringmaster.pb.h"
#include "ringmaster/security/keys.h"
#include "ringmaster/util/result.h"

namespace ringmaster::agent {

struct RankContext {
  std::string agent_dir;  // RINGMASTER_AGENT_DIR: marks the rank and everything it starts
  // CUDA_VISIBLE_DEVICES for the rank (job::planDevices); nullopt: the agent's own, if any.
  std::optional<std::string> cuda_visible_devices;
  std::string checkpoint_dir;  // RINGMASTER_CHECKPOINT_DIR
  std::string phase_file;      // RINGMASTER_PHASE_FILE (see job/rank_phase.h); empty: not set
  // RINGMASTER_RENDEZVOUS_SECRET_KEY_FILE: the attempt's rendezvous secret, in a file only the
  // rank user reads (writeRendezvousKeyFile), never in the environment, where a script printing
  // os.environ would put it into its log.
  std::string rendezvous_key_file;
  std::string error_file;  // TORCHELASTIC_ERROR_FILE (torch_error_file.h); empty: not set
  std::string workdir;     // PWD: where the rank starts, as a shell started there would say
  // The launcher's own contract (launchers/launcher.h: TF_CONFIG, CROSS_RANK, ...), set after the
  // common one, so the job's env may still replace them.
  std::vector<std::pair<std::string, std::string>> launcher_env;
};

// The attempt's credential for the job's rendezvous store (security::attemptKeyPair of the job's
// key pair); an error when the job has no rendezvous.
Result<security::KeyPair> rendezvousCredential(const proto::JobLaunch& job);

// Environment for one rank as "KEY=VALUE" strings: the agent's `base_env` first, then the
// contract, then the job's own env (job.env) on top. A later entry replaces an earlier one with the
// same name in place, so each name appears once, at its first position.
//
// Contract: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE (ranks of this job on this agent),
// GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK (= RANK), ROLE_NAME ("default"), ROLE_WORLD_SIZE
// (= WORLD_SIZE), MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT (attempts count from 1, so
// attempt - 1), TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID (= job id),
// TORCH_NCCL_ASYNC_ERROR_HANDLING=1, CUDA_VISIBLE_DEVICES (only when ctx sets it),
// RINGMASTER_JOB_ID, RINGMASTER_ATTEMPT, RINGMASTER_RANK, RINGMASTER_CHECKPOINT_DIR,
// RINGMASTER_PHASE_FILE (only when ctx sets it: native ranks), RINGMASTER_RENDEZVOUS_ENDPOINT,
// _SERVER_KEY, _PUBLIC_KEY and _SECRET_KEY_FILE (when the job has a rendezvous and ctx names the
// key file),
// ctx.launcher_env (the launcher's own variables), RINGMASTER_AGENT_DIR (set last, so that a job
// cannot hide its processes from the agent that ends what ranks leave behind: see leftovers.h);
// and, only when neither base_env nor job.env sets them, OMP_NUM_THREADS=1, PYTHONUNBUFFERED=1 (so
// that Python metric lines arrive promptly) and CUDA_DEVICE_ORDER=PCI_BUS_ID (so that CUDA's device
// indices are NVML's, the ones the agent reports health under).
//
// base_env entries without '=' and job.env entries whose name is empty or contains '=' are
// dropped: they cannot be expressed as KEY=VALUE (the job spec validator reports the latter).
std::vector<std::string> buildRankEnvironment(const proto::JobLaunch& job,
                                              const proto::RankAssignment& rank,
                                              const RankContext& ctx,
                                              const std::vector<std::string>& base_env);

}  // namespace ringmaster::agent

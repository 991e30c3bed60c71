#pragma once
// Device placement: which GPUs each rank of a job sees (CUDA_VISIBLE_DEVICES) and trains on, from
// the agents' GPUs, the ranks on each agent, the launcher and the backend. The client plans the
// whole job at submit (to refuse it, or to decide that backend auto trains on the CPU); each agent
// plans its own share again when it starts the ranks, from its own GPU list, so that no rank ever
// gets a GPU outside the agent's limit whatever a client sends.
//
//  - native and command: each rank sees one GPU of its own (CUDA device 0 in the rank);
//  - torchrun: every rank sees all the agent's GPUs and LOCAL_RANK picks, as under torchrun, so
//    `torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))` works unchanged;
//  - GPUs are named by UUID (by index only when the agent declared GPUs without NVML), so the GPU a
//    rank uses is the one whose health the agent reports under that index;
//  - backend nccl with fewer GPUs than ranks on an agent is an error naming the agent, its GPUs
//    and the ranks; backend auto then trains the whole job on the CPU (every rank's
//    CUDA_VISIBLE_DEVICES is empty) and says why; backend gloo, and backend auto on agents that
//    have no GPU at all, leave the environment alone;
//  - a job whose env sets CUDA_VISIBLE_DEVICES keeps it verbatim; each entry must be one of the
//    agent's GPUs (an index or a UUID), and those are the GPUs the rules above count.
//
// Thread safety: planDevices() is pure and may be called from any thread.

#include <optional>
#include <string>
#include <vector>

#include "ringmaster/job/spec.h"
#include "ringmaster/util/result.h"

namespace ringmaster::job {

// One GPU an agent may give to ranks.
struct Gpu {
  int index = 0;     // NVML's index (PCI bus order, which CUDA_DEVICE_ORDER=PCI_BUS_ID matches)
  std::string uuid;  // "GPU-…"; empty when the agent declared the GPU without NVML
  std::string name;  // e.g. "NVIDIA H100 80GB HBM3"; empty when unknown

  // What CUDA_VISIBLE_DEVICES names it by: the UUID, else the index.
  std::string cudaId() const;
  // "GPU 2 NVIDIA H100 80GB HBM3 (GPU-2c5e…)", for the job record.
  std::string describe() const;
};

struct AgentDevices {
  std::string agent;
  std::vector<Gpu> gpus;  // the GPUs it may give to ranks, in index order
  int ranks = 0;          // ranks of the job on this agent
};

struct DeviceRequest {
  Launcher launcher = Launcher::kNative;
  Backend backend = Backend::kAuto;
  // The job's own CUDA_VISIBLE_DEVICES (its env:), when it sets one.
  std::optional<std::string> job_visible_devices;
  // Set by an agent from the client's plan: the whole job trains on the CPU, for this reason.
  std::string cpu_reason;
};

struct RankDevices {
  // CUDA_VISIBLE_DEVICES to give the rank ("" hides every GPU); nullopt: leave the environment's.
  std::optional<std::string> cuda_visible_devices;
  // What the rank trains on, for the job record: Gpu::describe(), "CPU" or "" (the script picks).
  std::string device;
};

struct DevicePlan {
  bool gpus = false;       // every rank has a GPU of its own
  std::string cpu_reason;  // backend auto trains on the CPU: why (empty otherwise)
  std::vector<std::vector<RankDevices>> ranks;  // per agent (in the given order), per local rank
};

// The trimmed entries of a CUDA_VISIBLE_DEVICES-style list ("0, 2" or "GPU-…,GPU-…"); none for
// "" or blanks. An empty entry ("0,,1", "0,") is an error naming `what`.
Result<std::vector<std::string>> splitGpuList(const std::string& list, const std::string& what);

// A rank's device (RankDevices::device) for a table cell: "GPU 2 NVIDIA H100 80GB HBM3" (without
// the UUID) or "CPU"; and the reason of a "CPU: <why>" device ("" for any other).
std::string shortDevice(const std::string& device);
std::string cpuReasonOf(const std::string& device);

// Splits a CUDA_VISIBLE_DEVICES-style list ("0,2" or "GPU-…,GPU-…", spaces allowed) and finds
// each entry among `gpus` (by index, or by UUID or a unique UUID prefix). Errors name the entry
// and the GPUs there are. `what` says where the list came from, for the message.
Result<std::vector<Gpu>> selectGpus(const std::string& list, const std::vector<Gpu>& gpus,
                                    const std::string& what);

Result<DevicePlan> planDevices(const DeviceRequest& request,
                               const std::vector<AgentDevices>& agents);

}  // namespace ringmaster::job

#pragma once
// What launching the spec would do now, from the cluster's latest agent statuses: each rank's
// agent, host, LOCAL_RANK, device and CUDA_VISIBLE_DEVICES, WORLD_SIZE and MASTER_ADDR; or the
// problems that would make the launch fail (an agent not in the cluster file or not answering,
// more ranks than free slots, too few GPUs for backend nccl), each on its line of the spec, so
// the editor refuses them before a modal at launch does. Qt-free.
//
// Thread safety: pure function.

#include <string>
#include <vector>

#include "ringmaster/client/agent_status.h"
#include "ringmaster/job/spec.h"

namespace ringmaster::gui {

struct LaunchPreview {
  struct Rank {
    int rank = 0;
    int local_rank = 0;
    std::string agent, host;
    std::string device;                // "GPU 0 NVIDIA H100 80GB HBM3", "CPU" or "" (it picks)
    std::string cuda_visible_devices;  // "-" when left as the agent's environment
  };
  std::vector<job::SpecDiagnostic> problems;  // the launch would be refused: these
  std::vector<Rank> ranks;                    // when it would go
  int world_size = 0;
  std::string master_addr;  // rank 0's agent's host (its port is picked at launch)
  std::string cpu_reason;   // backend auto trains on the CPU: why
  std::string note;         // why there is no preview (no cluster yet, a Slurm job...)
};

// `spec_text` must already be a valid spec (checkSpecText() found nothing); `agents_known` is
// false until the cluster file was read.
LaunchPreview previewLaunch(const std::string& spec_text, const std::string& file,
                            const std::vector<client::AgentStatus>& agents, bool agents_known);

}  // namespace ringmaster::gui

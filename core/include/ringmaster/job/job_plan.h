#pragma once
// A job's plan on agents of known capacity: which agent runs which ranks and what device each
// rank trains on. `ringmasterctl submit` and the app's launch plan it from the agents' fresh
// inventories; the job editor from the latest ones it has, to preview the launch and to refuse
// what would be refused.
//
// Thread safety: pure functions.

#include <string>
#include <vector>

#include "ringmaster/job/device_plan.h"
#include "ringmaster/job/placement.h"
#include "ringmaster/job/spec.h"
#include "ringmaster/protocol/ringmaster.pb.h"
#include "ringmaster/util/result.h"

namespace ringmaster::job {

// An agent that answered, with what it can give.
struct AgentOffer {
  std::string name;
  int slots_total = 0;
  int slots_free = 0;
  std::vector<Gpu> gpus;
};

// What an agent's inventory offers.
AgentOffer offerOf(const std::string& name, const proto::Inventory& inventory);

struct JobPlan {
  std::vector<AgentShare> shares;  // in rank order of their first rank
  DevicePlan devices;              // per share, per local rank
};

// The device request of a spec: its launcher, backend and own CUDA_VISIBLE_DEVICES.
DeviceRequest deviceRequest(const JobSpec& spec);

// Places the job on `offers` (every other agent of `known` counts as known with no slots, so a
// typo gets "did you mean"), then plans its devices. Placement problems are INVALID_ARGUMENT
// with compiler-style diagnostics, also appended to *diagnostics (with their lines) when given;
// a GPU problem (backend nccl with fewer GPUs than ranks) is INVALID_ARGUMENT naming the agent.
Result<JobPlan> planJob(const JobSpec& spec, const std::vector<AgentOffer>& offers,
                        const std::vector<std::string>& known,
                        std::vector<SpecDiagnostic>* diagnostics = nullptr);

}  // namespace ringmaster::job

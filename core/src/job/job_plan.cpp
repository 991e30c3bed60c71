#include "ringmaster/job/job_plan.h"

#include <algorithm>
#include <map>

namespace ringmaster::job {
namespace {

// Backend nccl needs a GPU per rank. Checked before the ranks are fitted into slots, so that
// "8 ranks on an agent with 4 GPUs" says so rather than "4 free slots".
Status checkGpusForNccl(const JobSpec& spec, const std::vector<AgentOffer>& offers) {
  if (spec.backend != Backend::kNccl) return Status::ok();
  if (!spec.placement.empty()) {
    std::vector<AgentDevices> agents;
    for (const PlacementEntry& entry : spec.placement) {
      auto offer = std::find_if(offers.begin(), offers.end(),
                                [&](const AgentOffer& o) { return o.name == entry.agent; });
      if (offer != offers.end()) agents.push_back({entry.agent, offer->gpus, entry.ranks});
    }
    return planDevices(deviceRequest(spec), agents).status();
  }
  size_t total = 0;
  std::string each;
  for (const AgentOffer& offer : offers) {
    total += offer.gpus.size();
    each += (each.empty() ? "" : ", ") + offer.name + ": " + std::to_string(offer.gpus.size());
  }
  if (total >= static_cast<size_t>(spec.world_size)) return Status::ok();
  return invalidArgument("backend nccl needs one GPU per rank, and the job asks for " +
                         std::to_string(spec.world_size) + " ranks on agents with " +
                         std::to_string(total) + " GPUs in all (" + each + ")");
}

}  // namespace

AgentOffer offerOf(const std::string& name, const proto::Inventory& inventory) {
  AgentOffer offer{
      name, static_cast<int>(inventory.slots()), static_cast<int>(inventory.slots_free()), {}};
  for (const proto::GpuInfo& gpu : inventory.gpus()) {
    offer.gpus.push_back({static_cast<int>(gpu.index()), gpu.uuid(), gpu.name()});
  }
  return offer;
}

DeviceRequest deviceRequest(const JobSpec& spec) {
  DeviceRequest request;
  request.launcher = spec.launcher;
  request.backend = spec.backend;
  for (const auto& [name, value] : spec.env) {
    if (name == "CUDA_VISIBLE_DEVICES") request.job_visible_devices = value;
  }
  return request;
}

Result<JobPlan> planJob(const JobSpec& spec, const std::vector<AgentOffer>& offers,
                        const std::vector<std::string>& known,
                        std::vector<SpecDiagnostic>* diagnostics) {
  RM_RETURN_IF_ERROR(checkGpusForNccl(spec, offers));
  std::vector<AgentCapacity> capacity;
  std::map<std::string, const AgentOffer*> offer_of;
  for (const AgentOffer& offer : offers) {
    capacity.push_back({offer.name, offer.slots_total, offer.slots_free});
    offer_of[offer.name] = &offer;
  }
  for (const std::string& name : known) {
    if (!offer_of.count(name)) capacity.push_back({name, 0, 0});
  }
  JobPlan plan;
  std::vector<SpecDiagnostic> problems = resolvePlacement(spec, capacity, &plan.shares);
  if (!problems.empty()) {
    const Status refused = invalidArgument(formatDiagnostics(problems));
    if (diagnostics) diagnostics->insert(diagnostics->end(), problems.begin(), problems.end());
    return refused;
  }
  std::vector<AgentDevices> devices;
  for (const AgentShare& share : plan.shares) {
    auto offer = offer_of.find(share.agent);
    devices.push_back({share.agent,
                       offer == offer_of.end() ? std::vector<Gpu>{} : offer->second->gpus,
                       static_cast<int>(share.ranks.size())});
  }
  RM_ASSIGN_OR_RETURN(plan.devices, planDevices(deviceRequest(spec), devices));
  return plan;
}

}  // namespace ringmaster::job

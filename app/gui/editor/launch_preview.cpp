#include "editor/launch_preview.h"

#include <algorithm>

#include "ringmaster/client/cluster_config.h"
#include "ringmaster/job/job_plan.h"

namespace ringmaster::gui {

LaunchPreview previewLaunch(const std::string& spec_text, const std::string& file,
                            const std::vector<client::AgentStatus>& agents, bool agents_known) {
  LaunchPreview preview;
  const job::SpecParseResult parsed = job::parseJobSpec(spec_text, file);
  if (!parsed.spec) {
    preview.note = "the spec has problems";
    return preview;
  }
  const job::JobSpec& spec = *parsed.spec;
  if (spec.slurm) {
    preview.note = "Slurm places the ranks of this job when it starts it";
    return preview;
  }
  if (!agents_known) {
    preview.note = "no cluster loaded yet: the placement is checked at launch";
    return preview;
  }
  std::vector<job::AgentOffer> offers;
  std::vector<std::string> known;
  for (const client::AgentStatus& agent : agents) {
    known.push_back(agent.name);
    if (agent.state == client::AgentState::kOnline && agent.inventory) {
      offers.push_back(job::offerOf(agent.name, *agent.inventory));
    }
  }
  // An agent of the placement that does not answer: said as such, not as "0 free slots".
  for (const job::PlacementEntry& entry : spec.placement) {
    auto agent = std::find_if(agents.begin(), agents.end(),
                              [&](const client::AgentStatus& a) { return a.name == entry.agent; });
    if (agent == agents.end() || agent->state == client::AgentState::kOnline) continue;
    job::SpecDiagnostic d;
    d.file = file;
    d.line = entry.line;
    d.field = "placement[" + std::to_string(&entry - spec.placement.data()) + "].agent";
    d.message = "agent '" + entry.agent + "' is " + client::agentStateName(agent->state) +
                (agent->reason.empty() ? "" : ": " + agent->reason);
    preview.problems.push_back(std::move(d));
  }
  if (!preview.problems.empty()) return preview;
  auto plan = job::planJob(spec, offers, known, &preview.problems);
  if (!plan.isOk()) {
    if (preview.problems.empty()) {  // a device problem: the job's, no line of its own
      job::SpecDiagnostic d;
      d.file = file;
      d.field = "backend";
      d.message = plan.status().message();
      preview.problems.push_back(std::move(d));
    }
    return preview;
  }
  preview.world_size = 0;
  for (size_t g = 0; g < plan->shares.size(); ++g) {
    const job::AgentShare& share = plan->shares[g];
    auto agent = std::find_if(agents.begin(), agents.end(),
                              [&](const client::AgentStatus& a) { return a.name == share.agent; });
    // Where it runs: the host's own name, else the endpoint's host, else the agent's name.
    const std::string address = agent == agents.end() ? "" : client::endpointHost(agent->endpoint);
    std::string host =
        agent != agents.end() && agent->inventory ? agent->inventory->hostname() : "";
    if (host.empty()) host = address.empty() ? share.agent : address;
    if (g == 0) preview.master_addr = address.empty() ? host : address;
    for (size_t local = 0; local < share.ranks.size(); ++local) {
      const job::RankDevices& device = plan->devices.ranks[g][local];
      LaunchPreview::Rank rank;
      rank.rank = share.ranks[local];
      rank.local_rank = static_cast<int>(local);
      rank.agent = share.agent;
      rank.host = host;
      rank.device = job::shortDevice(device.device);
      rank.cuda_visible_devices = device.cuda_visible_devices.value_or("-");
      preview.ranks.push_back(std::move(rank));
      ++preview.world_size;
    }
  }
  std::sort(preview.ranks.begin(), preview.ranks.end(),
            [](const auto& a, const auto& b) { return a.rank < b.rank; });
  preview.cpu_reason = plan->devices.cpu_reason;
  return preview;
}

}  // namespace ringmaster::gui

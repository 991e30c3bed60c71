#include "ringmaster/job/device_plan.h"

#include <algorithm>
#include <cctype>

namespace ringmaster::job {
namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

bool isIndex(const std::string& s) {
  return !s.empty() && s.size() < 6 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string listOf(const std::vector<Gpu>& gpus) {
  if (gpus.empty()) return "none";
  std::string out;
  for (const Gpu& gpu : gpus) {
    if (!out.empty()) out += ", ";
    out += std::to_string(gpu.index);
    if (!gpu.uuid.empty()) out += " (" + gpu.uuid + ")";
  }
  return out;
}

std::string gpusText(size_t n) {
  return n == 0 ? "no GPU" : std::to_string(n) + (n == 1 ? " GPU" : " GPUs");
}

std::string ranksText(int n) { return std::to_string(n) + (n == 1 ? " rank" : " ranks"); }

// The GPUs the job may use on one agent: the job's CUDA_VISIBLE_DEVICES picks, else all of them.
Result<std::vector<Gpu>> usableGpus(const DeviceRequest& request, const AgentDevices& agent) {
  if (!request.job_visible_devices) return agent.gpus;
  return selectGpus(*request.job_visible_devices, agent.gpus,
                    "the job's env CUDA_VISIBLE_DEVICES on agent '" + agent.agent + "'");
}

std::string joinedIds(const std::vector<Gpu>& gpus) {
  std::string out;
  for (const Gpu& gpu : gpus) out += (out.empty() ? "" : ",") + gpu.cudaId();
  return out;
}

}  // namespace

std::string Gpu::cudaId() const { return uuid.empty() ? std::to_string(index) : uuid; }

std::string Gpu::describe() const {
  std::string out = "GPU " + std::to_string(index);
  if (!name.empty()) out += " " + name;
  if (!uuid.empty()) out += " (" + uuid + ")";
  return out;
}

Result<std::vector<std::string>> splitGpuList(const std::string& list, const std::string& what) {
  std::vector<std::string> entries;
  if (trim(list).empty()) return entries;  // "": no GPU
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    entries.push_back(trim(list.substr(start, comma - start)));
    start = comma + 1;
    if (entries.back().empty()) {
      return invalidArgument(what + " has an empty entry in '" + list + "'");
    }
  }
  return entries;
}

std::string shortDevice(const std::string& device) {
  if (device.starts_with("CPU")) return "CPU";
  return device.substr(0, device.find(" (GPU-"));
}

std::string cpuReasonOf(const std::string& device) {
  return device.starts_with("CPU: ") ? device.substr(5) : std::string();
}

Result<std::vector<Gpu>> selectGpus(const std::string& list, const std::vector<Gpu>& gpus,
                                    const std::string& what) {
  RM_ASSIGN_OR_RETURN(const std::vector<std::string> entries, splitGpuList(list, what));
  std::vector<Gpu> selected;
  for (const std::string& entry : entries) {
    std::vector<const Gpu*> matches;
    for (const Gpu& gpu : gpus) {
      const bool match = isIndex(entry) ? std::stoi(entry) == gpu.index
                                        : !gpu.uuid.empty() && gpu.uuid.starts_with(entry);
      if (match) matches.push_back(&gpu);
    }
    if (matches.size() != 1) {
      return invalidArgument(
          what + " names GPU '" + entry + "', which " +
          (matches.empty() ? "is not one of its GPUs" : "matches more than one of its GPUs") +
          " (its GPUs: " + listOf(gpus) + ")");
    }
    if (std::any_of(selected.begin(), selected.end(),
                    [&](const Gpu& g) { return g.index == matches[0]->index; })) {
      return invalidArgument(what + " names GPU '" + entry + "' twice");
    }
    selected.push_back(*matches[0]);
  }
  return selected;
}

Result<DevicePlan> planDevices(const DeviceRequest& request,
                               const std::vector<AgentDevices>& agents) {
  std::vector<std::vector<Gpu>> usable;
  for (const AgentDevices& agent : agents) {
    RM_ASSIGN_OR_RETURN(std::vector<Gpu> gpus, usableGpus(request, agent));
    usable.push_back(std::move(gpus));
  }

  DevicePlan plan;
  plan.cpu_reason = request.cpu_reason;
  // On a cluster without GPUs, backend auto is simply the CPU: nothing to explain or hide.
  const bool any_gpu =
      std::any_of(usable.begin(), usable.end(), [](const auto& gpus) { return !gpus.empty(); });
  const bool wants_gpus = request.backend == Backend::kNccl ||
                          (request.backend == Backend::kAuto && any_gpu && plan.cpu_reason.empty());
  if (wants_gpus) {
    // NCCL refuses two ranks on one device, so a rank without a GPU of its own cannot use one.
    for (size_t a = 0; a < agents.size() && plan.cpu_reason.empty(); ++a) {
      const size_t have = usable[a].size();
      const int ranks = agents[a].ranks;
      if (have >= static_cast<size_t>(ranks) && have > 0) continue;
      const std::string limit =
          request.job_visible_devices ? " in the job's CUDA_VISIBLE_DEVICES" : "";
      const std::string shortfall = "agent '" + agents[a].agent + "' has " + gpusText(have) +
                                    limit + " for " + ranksText(ranks);
      if (request.backend == Backend::kNccl) {
        return invalidArgument("backend nccl needs one GPU per rank, and " + shortfall +
                               " (give it at most " + std::to_string(have) +
                               " ranks, or use backend: auto or gloo to train on the CPU)");
      }
      plan.cpu_reason = shortfall + ", so backend auto trains on the CPU with Gloo";
    }
  }
  plan.gpus = wants_gpus && plan.cpu_reason.empty();

  for (size_t a = 0; a < agents.size(); ++a) {
    std::vector<RankDevices>& ranks = plan.ranks.emplace_back(agents[a].ranks);
    for (int local = 0; local < agents[a].ranks; ++local) {
      RankDevices& rank = ranks[static_cast<size_t>(local)];
      if (plan.gpus) {
        const Gpu& own = usable[a][static_cast<size_t>(local)];
        rank.device = own.describe();
        if (request.job_visible_devices) continue;  // the job's own list, verbatim
        // torchrun and DeepSpeed's launcher show a rank every GPU of its node and let LOCAL_RANK
        // pick one (deepspeed.launcher.launch sets CUDA_VISIBLE_DEVICES to the node's list).
        const bool node_wide =
            request.launcher == Launcher::kTorchrun || request.launcher == Launcher::kDeepspeed;
        rank.cuda_visible_devices = node_wide ? joinedIds(usable[a]) : own.cudaId();
      } else if (!plan.cpu_reason.empty()) {
        rank.device = "CPU: " + plan.cpu_reason;
        rank.cuda_visible_devices = "";
      } else if (request.launcher == Launcher::kNative) {
        rank.device = request.backend == Backend::kGloo ? "CPU (backend gloo)" : "CPU";
      }
    }
  }
  return plan;
}

}  // namespace ringmaster::job

#include "ringmaster/job/placement.h"

#include <algorithm>
#include <cstdint>
#include <map>

#include "ringmaster/util/closest_match.h"

namespace ringmaster::job {
namespace {

std::string entryField(size_t index, const char* member) {
  return "placement[" + std::to_string(index) + "]." + member;
}

std::string agentNames(const std::vector<AgentCapacity>& agents) {
  std::string out;
  for (const AgentCapacity& agent : agents) {
    if (!out.empty()) out += ", ";
    out += agent.name;
  }
  return out;
}

std::string slotsText(int count) {
  return std::to_string(count) + (count == 1 ? " slot" : " slots");
}

class PlacementResolver {
 public:
  PlacementResolver(const JobSpec& spec, const std::vector<AgentCapacity>& agents)
      : spec_(spec), agents_(agents) {}

  std::vector<SpecDiagnostic> resolve(std::vector<AgentShare>* shares) {
    if (spec_.placement.empty()) {
      resolveWorldSize();
    } else {
      resolveExplicitPlacement();
    }
    if (shares != nullptr) {
      shares->clear();
      if (errors_.empty()) *shares = std::move(shares_);
    }
    return std::move(errors_);
  }

 private:
  void report(int line, std::string field, std::string message, std::string hint = {}) {
    SpecDiagnostic d;
    d.file = spec_.file;
    d.line = line;
    d.field = std::move(field);
    d.message = std::move(message);
    d.hint = std::move(hint);
    errors_.push_back(std::move(d));
  }

  const AgentCapacity* findAgent(const std::string& name) const {
    const auto it = std::find_if(agents_.begin(), agents_.end(),
                                 [&](const AgentCapacity& a) { return a.name == name; });
    return it == agents_.end() ? nullptr : &*it;
  }

  std::string unknownAgentHint(const std::string& name) const {
    if (agents_.empty()) return "no agents are connected";
    std::vector<std::string> names;
    for (const AgentCapacity& agent : agents_) names.push_back(agent.name);
    const std::string closest = closestMatch(name, names);
    if (!closest.empty()) return "did you mean '" + closest + "'?";
    return "known agents: " + agentNames(agents_);
  }

  void resolveExplicitPlacement() {
    std::map<std::string, size_t> first_index;
    int next_rank = 0;
    for (size_t i = 0; i < spec_.placement.size(); ++i) {
      const PlacementEntry& entry = spec_.placement[i];
      if (!checkEntry(entry, i, &first_index)) continue;
      AgentShare share{entry.agent, {}};
      for (int r = 0; r < entry.ranks; ++r) share.ranks.push_back(next_rank++);
      shares_.push_back(std::move(share));
    }
  }

  bool checkEntry(const PlacementEntry& entry, size_t index,
                  std::map<std::string, size_t>* first_index) {
    const auto [previous, inserted] = first_index->emplace(entry.agent, index);
    if (!inserted) {
      const PlacementEntry& first = spec_.placement[previous->second];
      report(entry.line, entryField(index, "agent"),
             "agent '" + entry.agent + "' is listed twice (first at placement[" +
                 std::to_string(previous->second) + "], line " + std::to_string(first.line) + ")",
             "merge the two entries into one");
      return false;
    }
    if (entry.ranks <= 0) {
      report(entry.line, entryField(index, "ranks"),
             "expected a positive integer, got " + std::to_string(entry.ranks));
      return false;
    }
    const AgentCapacity* agent = findAgent(entry.agent);
    if (agent == nullptr) {
      report(entry.line, entryField(index, "agent"), "unknown agent '" + entry.agent + "'",
             unknownAgentHint(entry.agent));
      return false;
    }
    const int free = std::max(agent->slots_free, 0);
    if (entry.ranks > free) {
      report(entry.line, entryField(index, "ranks"),
             std::to_string(entry.ranks) + " ranks requested but agent '" + agent->name + "' has " +
                 std::to_string(free) + " free of " + slotsText(agent->slots_total),
             free == 0 ? "wait for its running jobs to finish, or place the ranks elsewhere"
                       : "ask for at most " + std::to_string(free) + " ranks there");
      return false;
    }
    return true;
  }

  void resolveWorldSize() {
    if (spec_.world_size <= 0) {
      report(spec_.world_size_line, "world_size",
             "expected a positive integer, got " + std::to_string(spec_.world_size),
             "give either placement or world_size");
      return;
    }
    int64_t free_total = 0;
    int64_t slots_total = 0;
    for (const AgentCapacity& agent : agents_) {
      free_total += std::max(agent.slots_free, 0);
      slots_total += std::max(agent.slots_total, 0);
    }
    if (spec_.world_size > free_total) {
      report(spec_.world_size_line, "world_size",
             "world_size " + std::to_string(spec_.world_size) +
                 " is larger than the free slots on " + "all agents (" +
                 std::to_string(free_total) + " free of " + std::to_string(slots_total) + ")",
             freeSlotsHint());
      return;
    }
    int next_rank = 0;
    for (const AgentCapacity& agent : agents_) {
      const int take = std::min(std::max(agent.slots_free, 0), spec_.world_size - next_rank);
      if (take <= 0) continue;
      AgentShare share{agent.name, {}};
      for (int r = 0; r < take; ++r) share.ranks.push_back(next_rank++);
      shares_.push_back(std::move(share));
    }
  }

  std::string freeSlotsHint() const {
    if (agents_.empty()) return "no agents are connected";
    std::string out = "free slots: ";
    for (size_t i = 0; i < agents_.size(); ++i) {
      if (i > 0) out += ", ";
      out += agents_[i].name + " " + std::to_string(std::max(agents_[i].slots_free, 0)) + "/" +
             std::to_string(agents_[i].slots_total);
    }
    return out;
  }

  const JobSpec& spec_;
  const std::vector<AgentCapacity>& agents_;
  std::vector<SpecDiagnostic> errors_;
  std::vector<AgentShare> shares_;
};

}  // namespace

std::vector<SpecDiagnostic> resolvePlacement(const JobSpec& spec,
                                             const std::vector<AgentCapacity>& agents,
                                             std::vector<AgentShare>* shares) {
  return PlacementResolver(spec, agents).resolve(shares);
}

}  // namespace ringmaster::job

#include "gang_tree.h"

#include <cstdlib>
#include <string>

namespace ringmaster::agent {
namespace {

// Where member `index` reports: its nearest ancestor not lost, else the first member not lost.
std::optional<size_t> parentOf(size_t index, const std::vector<bool>& lost, size_t fanout,
                               size_t leader) {
  if (index == leader) return std::nullopt;
  const size_t root_children = rootChildren(fanout);
  for (size_t place = index; place != 0;) {
    place = place <= root_children ? 0 : (place - root_children - 1) / fanout + 1;
    if (!lost[place]) return place;
  }
  return leader;
}

}  // namespace

size_t gangFanout() {
  const char* text = std::getenv("RINGMASTER_GANG_FANOUT");
  if (!text) return kGangFanout;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return end != text && *end == '\0' && value >= 2 && value <= 1000 ? static_cast<size_t>(value)
                                                                    : kGangFanout;
}

TreePlace treePlace(size_t self, const std::vector<bool>& lost, size_t fanout) {
  size_t leader = 0;
  while (leader < lost.size() && lost[leader]) ++leader;
  std::vector<std::optional<size_t>> parents(lost.size());
  for (size_t i = 0; i < lost.size(); ++i) parents[i] = parentOf(i, lost, fanout, leader);
  TreePlace place;
  place.parent = parents[self];
  for (size_t i = 0; i < lost.size(); ++i) {
    if (parents[i] == self) place.children.push_back(i);
    // Parents come before their children, but the leader: the chain ends at it.
    for (auto up = parents[i]; up && i != self; up = parents[*up]) {
      if (*up == self) {
        place.below.push_back(i);
        break;
      }
    }
  }
  return place;
}

}  // namespace ringmaster::agent

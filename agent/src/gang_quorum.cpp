#include "gang_quorum.h"

namespace ringmaster::agent {

Quorum quorumOf(const std::vector<std::string>& members, const std::set<std::string>& answering,
                const std::set<std::string>& down) {
  Quorum quorum;
  for (const std::string& member : members) {
    const bool answers = answering.count(member) > 0;
    if (!answers && down.count(member)) continue;
    ++quorum.voters;
    if (quorum.tie_break.empty()) quorum.tie_break = member;
    quorum.answering += answers;
  }
  quorum.needed = quorum.voters / 2 + 1;
  const bool tie = quorum.voters % 2 == 0 && 2 * quorum.answering == quorum.voters &&
                   answering.count(quorum.tie_break) > 0;
  quorum.majority = quorum.voters > 0 && (quorum.answering >= quorum.needed || tie);
  return quorum;
}

std::string describeWait(const Quorum& quorum) {
  std::string text = std::to_string(quorum.answering) + " of " + std::to_string(quorum.voters) +
                     " agent" + (quorum.voters == 1 ? "" : "s") +
                     (quorum.answering == 1 ? " answers" : " answer") + "; a majority (" +
                     std::to_string(quorum.needed) + ") is needed to go on";
  if (quorum.voters % 2 == 0 && !quorum.tie_break.empty()) {
    text += ", or " + std::to_string(quorum.voters / 2) + " with " + quorum.tie_break;
  }
  return text;
}

}  // namespace ringmaster::agent

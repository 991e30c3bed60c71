#pragma once
// Which client key submitted each job this agent has run: a `user` key may see, stop, restart
// and read only its own jobs (an `admin` key, any). Kept from the JobAccepted records of the
// journal, so that it outlives an agent restart. Used by the agent's loop only.

#include <optional>
#include <string>
#include <unordered_map>

namespace ringmaster::proto {
class JournalRecord;
}

namespace ringmaster::agent {

class Journal;

class JobOwners {
 public:
  // Reads the owners of every job in `journal`.
  void load(Journal& journal);
  void note(const proto::JournalRecord& record);
  void note(const std::string& job, const std::string& owner_key);

  // The public key that submitted `job`; "" for a job submitted before owners were recorded
  // (an admin's alone), nullopt for a job this agent never ran.
  std::optional<std::string> ownerOf(const std::string& job) const;

 private:
  std::unordered_map<std::string, std::string> owners_;
};

}  // namespace ringmaster::agent

#pragma once
// Answers to a client's reads of this agent's journal and of its ranks' logs. Each returns the
// reply to send (an error reply included), or nullopt while a long poll should wait for data;
// `final` (its wait is over) always gives a reply.

#include <functional>
#include <optional>
#include <string>

#include "ringmaster/protocol/ringmaster.pb.h"

namespace ringmaster::agent {

class Journal;
class JobSupervisor;

// Whether a reader may see the records of `job` ("" for host records); an empty filter sees all.
using JobFilter = std::function<bool(const std::string& job)>;

// Records the filter hides are left out of the batch; its next_seq still moves past them.
std::optional<proto::Envelope> answerJournalRead(Journal& journal, const proto::Envelope& request,
                                                 bool final, const std::string& agent_name,
                                                 const JobFilter& visible = {});

std::optional<proto::Envelope> answerLogRead(const JobSupervisor& supervisor,
                                             const proto::Envelope& request, bool final,
                                             const std::string& agent_name);

// The largest reply a read of the journal or of a log may get (its max_bytes, capped; the
// default when unset); 0 for any other request.
uint64_t mostReplyBytes(const proto::Envelope& request);

}  // namespace ringmaster::agent

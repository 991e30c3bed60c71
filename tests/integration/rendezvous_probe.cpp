// Run as the ranks of a `command` job by rendezvous_test: exercises the job's rendezvous store
// through its per-job credential, and checks that the credential opens nothing else.
// Rank 0 publishes a key; every rank reads it back; each rank prints one JSON metric line.
#include <cstdio>
#include <cstdlib>

#include "ringmaster/client/rendezvous_store.h"

using namespace ringmaster;

int main() {
  auto where = client::RendezvousEndpoint::fromEnvironment();
  if (!where.isOk()) {
    std::fprintf(stderr, "%s\n", where.status().toString().c_str());
    return 2;
  }
  const int rank = std::atoi(std::getenv("RANK"));
  auto store = client::AgentRendezvousStore::connect(*where);
  if (!store.isOk()) {
    std::fprintf(stderr, "%s\n", store.status().toString().c_str());
    return 2;
  }
  if (rank == 0 && !(*store)->set("greeting", "hello from rank 0").isOk()) return 3;
  auto value = (*store)->get("greeting", std::chrono::seconds(20));
  const bool got = value.isOk() && *value == "hello from rank 0";
  if (!value.isOk()) std::fprintf(stderr, "get: %s\n", value.status().toString().c_str());

  // A key nobody sets times out with an error naming it.
  auto missing = (*store)->get("never-set", std::chrono::milliseconds(300));
  const bool timed_out = !missing.isOk() && missing.status().code() == ErrorCode::kTimeout &&
                         missing.status().message().find("never-set") != std::string::npos;
  if (!timed_out) std::fprintf(stderr, "get never-set: %s\n", missing.status().toString().c_str());

  // The credential opens this job's rendezvous and nothing else: not the journal, not another
  // job's store.
  client::ZmqContext context;
  auto connection = client::AgentConnection::connect(
      context, {"rank-0 agent", where->endpoint, where->server_key}, where->credential);
  proto::Envelope journal;
  journal.mutable_read_journal()->set_from_seq(1);
  auto read = (*connection)->call(journal, 5000);
  proto::Envelope other;
  other.mutable_rendezvous_set()->set_job_id("some-other-job");
  other.mutable_rendezvous_set()->set_key("k");
  auto foreign = (*connection)->call(other, 5000);
  const bool confined = !read.isOk() && read.status().code() == ErrorCode::kUnauthorized &&
                        !foreign.isOk() && foreign.status().code() == ErrorCode::kUnauthorized;

  // Rank 0's agent hosts the store only while rank 0 runs: rank 0 leaves last, once every other
  // rank has said it is done, so that no rank's checks meet a store already gone.
  const int world_size = std::atoi(std::getenv("WORLD_SIZE"));
  if (!(*store)->set("done/" + std::to_string(rank), "1").isOk()) return 4;
  for (int r = 1; rank == 0 && r < world_size; ++r) {
    if (!(*store)->get("done/" + std::to_string(r), std::chrono::seconds(30)).isOk()) return 4;
  }

  std::printf(
      "{\"got_greeting\": %d, \"missing_key_timed_out\": %d, \"credential_confined\": %d}\n", got,
      timed_out, confined);
  return got && timed_out && confined ? 0 : 1;
}

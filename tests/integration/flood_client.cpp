// A careless or hostile client, for the agent hardening tests: over CONNECTIONS connections (1 by
// default) sends COUNT requests each to read 16 MB of a rank's log, never reads a reply, says
// "sent" and waits to be killed.
// flood_client ENDPOINT SERVER_KEY CLIENT_KEY_FILE JOB COUNT [CONNECTIONS]
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "ringmaster/client/agent_connection.h"
#include "ringmaster/protocol/codec.h"
#include "ringmaster/security/keys.h"

using namespace ringmaster;

int main(int argc, char** argv) {
  if (argc != 6 && argc != 7) {
    std::fprintf(stderr,
                 "usage: flood_client ENDPOINT SERVER_KEY CLIENT_KEY_FILE JOB COUNT "
                 "[CONNECTIONS]\n");
    return 2;
  }
  auto keys = security::loadOrCreateKeyPair(argv[3]);
  if (!keys.isOk()) {
    std::fprintf(stderr, "%s\n", keys.status().toString().c_str());
    return 2;
  }
  client::ZmqContext context;
  const int count = std::atoi(argv[5]);
  const int connections = argc == 7 ? std::atoi(argv[6]) : 1;
  std::vector<std::unique_ptr<client::AgentConnection>> open;
  for (int c = 0; c < connections; ++c) {
    auto connection = client::AgentConnection::connect(context, {"agent", argv[1], argv[2]}, *keys);
    if (!connection.isOk()) {
      std::fprintf(stderr, "%s\n", connection.status().toString().c_str());
      return 2;
    }
    open.push_back(std::move(*connection));
  }
  for (int i = 0; i < count; ++i) {
    for (auto& connection : open) {
      proto::Envelope request;
      request.set_request_id(static_cast<uint64_t>(i) + 1);
      proto::ReadLog* read = request.mutable_read_log();
      read->set_job_id(argv[4]);
      read->set_rank(0);
      read->set_max_bytes(protocol::kMaxReplyBytes);
      if (Status sent = connection->send(request, 5000); !sent.isOk()) {
        std::fprintf(stderr, "request %d: %s\n", i, sent.toString().c_str());
        return 1;
      }
    }
  }
  std::printf("sent\n");
  std::fflush(stdout);
  ::pause();
}

// How many agents one client context can hold connections to.
#include "ringmaster/client/agent_connection.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <memory>
#include <vector>

#include "ringmaster/security/keys.h"

namespace ringmaster::client {
namespace {

// libzmq's default of 1,023 sockets a context allowed 341 connections (three sockets each): a
// cluster session of 256 agents, two connections an agent, watched only 170 of them and stored
// no metric of the others. Nothing listens at the endpoint: connecting creates the sockets all
// the same.
TEST(AgentConnectionTest, OneContextHoldsConnectionsToFiveHundredAgents) {
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  files.rlim_cur = files.rlim_max;  // as a cluster session does
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &files), 0);
  if (files.rlim_cur < 4000) GTEST_SKIP() << "needs 4000 open files (ulimit -Hn)";
  auto server = security::generateKeyPair();
  auto client_keys = security::generateKeyPair();
  ASSERT_TRUE(server.isOk() && client_keys.isOk());
  ZmqContext context;
  std::vector<std::unique_ptr<AgentConnection>> connections;
  for (int i = 0; i < 500; ++i) {
    auto connection = AgentConnection::connect(
        context, {"agent" + std::to_string(i), "tcp://127.0.0.1:9", server->public_key},
        *client_keys);
    ASSERT_TRUE(connection.isOk()) << i << ": " << connection.status().message();
    connections.push_back(std::move(*connection));
  }
}

}  // namespace
}  // namespace ringmaster::client

// Every agent socket is CURVE-authenticated against authorized_keys: plaintext clients and unknown
// keys get nothing and run nothing, authorized clients keep working, garbage never crashes it.
#include <gtest/gtest.h>
#include <zmq.h>

#include <filesystem>
#include <random>
#include <regex>
#include <thread>

#include "harness.h"
#include "ringmaster/client/agent_connection.h"
#include "ringmaster/protocol/codec.h"
#include "ringmaster/security/keys.h"

namespace ringmaster::testing {
namespace {

using client::AgentConnection;
using client::AgentEndpoint;
using client::ZmqContext;

proto::Envelope inventoryRequest() {
  proto::Envelope request;
  request.mutable_inventory_request();
  return request;
}

class SecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(cluster_.addAgent("a1", 2, &error)) << error;
    auto keys = security::loadOrCreateKeyPair(cluster_.configDir() + "/client.key");
    ASSERT_TRUE(keys.isOk());
    authorized_ = *keys;
    endpoint_ = {"a1", cluster_.agent("a1").endpoint(), cluster_.agent("a1").publicKey()};
  }

  void expectAuthorizedClientStillServed() {
    auto connection = AgentConnection::connect(context_, endpoint_, authorized_);
    ASSERT_TRUE(connection.isOk());
    auto reply = (*connection)->call(inventoryRequest(), 5000);
    ASSERT_TRUE(reply.isOk()) << reply.status().toString();
    EXPECT_EQ(reply->inventory().agent_name(), "a1");
    EXPECT_TRUE(cluster_.agent("a1").alive());
  }

  Cluster cluster_;
  ZmqContext context_;
  security::KeyPair authorized_;
  AgentEndpoint endpoint_;
};

TEST_F(SecurityTest, PlaintextClientGetsNothing) {
  void* socket = zmq_socket(context_.get(), ZMQ_DEALER);
  int linger = 0, timeout = 1500;
  zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof linger);
  zmq_setsockopt(socket, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
  zmq_setsockopt(socket, ZMQ_SNDTIMEO, &timeout, sizeof timeout);
  ASSERT_EQ(zmq_connect(socket, endpoint_.endpoint.c_str()), 0);
  proto::Envelope request = inventoryRequest();
  std::string frame = protocol::encode(request);
  zmq_send(socket, frame.data(), frame.size(), 0);
  char buffer[256];
  EXPECT_EQ(zmq_recv(socket, buffer, sizeof buffer, 0), -1) << "a plaintext client was answered";
  zmq_close(socket);
  expectAuthorizedClientStillServed();
  // Logged with the peer's address and why (libzmq itself says nothing of it). Under heavy load
  // libzmq was once seen to report this failure without its detail (a CI-like run, 1 in ~10).
  EXPECT_TRUE(std::regex_search(cluster_.agent("a1").stderrText(),
                                std::regex(R"(refused a connection from 127\.0\.0\.1:\d+: )"
                                           R"((not CURVE \(a plaintext client|it closed))")))
      << cluster_.agent("a1").stderrText();
}

TEST_F(SecurityTest, UnknownKeyIsRejectedWithAClearErrorAndRunsNothing) {
  auto stranger = security::generateKeyPair();
  ASSERT_TRUE(stranger.isOk());
  auto connection = AgentConnection::connect(context_, endpoint_, *stranger);
  ASSERT_TRUE(connection.isOk());
  proto::Envelope launch;
  auto* job = launch.mutable_launch_job()->mutable_launch();
  job->set_job_id("intruder");
  job->set_attempt(1);
  job->set_launcher(proto::COMMAND);
  job->add_argv("/bin/touch");
  job->add_argv(cluster_.dir() + "/pwned");
  job->set_world_size(1);
  job->add_ranks()->set_rank(0);
  auto reply = (*connection)->call(launch, 2000);
  ASSERT_FALSE(reply.isOk());
  EXPECT_EQ(reply.status().code(), ErrorCode::kUnauthorized) << reply.status().toString();
  EXPECT_NE(reply.status().message().find("rejected this client's key"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(std::filesystem::exists(cluster_.dir() + "/pwned"));
  EXPECT_NE(cluster_.agent("a1").stderrText().find("refused CURVE client " + stranger->public_key),
            std::string::npos);
  expectAuthorizedClientStillServed();
}

TEST_F(SecurityTest, WrongServerKeyFailsTheHandshake) {
  auto impostor = security::generateKeyPair();
  AgentEndpoint pinned_wrong = endpoint_;
  pinned_wrong.server_key = impostor->public_key;
  auto connection = AgentConnection::connect(context_, pinned_wrong, authorized_);
  ASSERT_TRUE(connection.isOk());
  auto reply = (*connection)->call(inventoryRequest(), 2000);
  ASSERT_FALSE(reply.isOk());
  EXPECT_EQ(reply.status().code(), ErrorCode::kUnauthorized) << reply.status().toString();
  expectAuthorizedClientStillServed();
  EXPECT_TRUE(std::regex_search(
      cluster_.agent("a1").stderrText(),
      std::regex(R"(refused a connection from 127\.0\.0\.1:\d+: )"
                 R"((its CURVE hello does not decrypt: it pinned another server key|it closed))")))
      << cluster_.agent("a1").stderrText();
}

// rotate-key: the agent answers with the new key from its next start; a client still pinned
// on the old one fails the handshake (named as a key mismatch), and the old pair is kept.
TEST_F(SecurityTest, RotateKeyGivesTheAgentANewKeyFromItsNextStart) {
  const std::string old_key = endpoint_.server_key;
  const std::string key_path = cluster_.agent("a1").stateDir() + "/agent.key";
  auto rotated = runCommand(
      {binPath("ringmaster-agent"), "rotate-key", "--state-dir", cluster_.agent("a1").stateDir()});
  ASSERT_EQ(rotated.exit_code, 0) << rotated.err;
  const std::string new_key = rotated.firstLine();
  ASSERT_TRUE(security::isValidKey(new_key)) << rotated.out;
  EXPECT_NE(new_key, old_key);
  EXPECT_NE(rotated.err.find("restart the agent"), std::string::npos) << rotated.err;
  EXPECT_NE(readFile(key_path + ".previous").find("public " + old_key), std::string::npos);
  EXPECT_EQ(std::filesystem::status(key_path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  expectAuthorizedClientStillServed();  // the running agent keeps its key until it restarts

  std::string error;
  ASSERT_TRUE(cluster_.crashAndRestartAgent("a1", &error)) << error;
  EXPECT_EQ(cluster_.agent("a1").publicKey(), new_key);
  AgentEndpoint pinned_old = {"a1", cluster_.agent("a1").endpoint(), old_key};
  auto stale = AgentConnection::connect(context_, pinned_old, authorized_);
  ASSERT_TRUE(stale.isOk());
  auto refused = (*stale)->call(inventoryRequest(), 2000);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("its key does not match server_key " + old_key),
            std::string::npos)
      << refused.status().toString();
  endpoint_ = {"a1", cluster_.agent("a1").endpoint(), new_key};
  expectAuthorizedClientStillServed();

  auto missing = runCommand({binPath("ringmaster-agent"), "rotate-key", "--state-dir",
                             cluster_.dir() + "/no-such-agent"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("no key pair at"), std::string::npos) << missing.err;
}

// With a key that begins with '-' (one in 85 does), which must not read as an option.
TEST_F(SecurityTest, AuthorizeTakesEffectWithoutRestart) {
  auto newcomer = security::generateKeyPair();
  while (newcomer->public_key.front() != '-') newcomer = security::generateKeyPair();
  {
    auto connection = AgentConnection::connect(context_, endpoint_, *newcomer);
    EXPECT_FALSE((*connection)->call(inventoryRequest(), 1500).isOk());
  }
  auto authorized = runCommand({binPath("ringmaster-agent"), "authorize", "--state-dir",
                                cluster_.agent("a1").stateDir(), newcomer->public_key});
  ASSERT_EQ(authorized.exit_code, 0) << authorized.err;
  auto connection = AgentConnection::connect(context_, endpoint_, *newcomer);
  auto reply = (*connection)->call(inventoryRequest(), 5000);
  EXPECT_TRUE(reply.isOk()) << reply.status().toString();
}

// A job's key opens the gang messages of that job from its PrepareJob on (its agents' first
// handshakes to each other must not be refused: libzmq never retries one), and nothing once its
// slots are released without a launch.
TEST_F(SecurityTest, AJobKeyIsAdmittedFromItsPrepareUntilItsSlotsAreReleased) {
  auto job_keys = security::generateKeyPair();
  ASSERT_TRUE(job_keys.isOk());
  auto client = AgentConnection::connect(context_, endpoint_, authorized_);
  ASSERT_TRUE(client.isOk());
  proto::Envelope prepare;
  proto::JobLaunch* launch = prepare.mutable_prepare_job()->mutable_launch();
  launch->set_job_id("held");
  launch->set_attempt(1);
  launch->set_launcher(proto::COMMAND);
  launch->add_argv("/bin/true");
  launch->set_world_size(1);
  launch->add_ranks()->set_rank(0);
  launch->set_rendezvous_public_key(job_keys->public_key);
  launch->set_rendezvous_secret_key(job_keys->secret_key);
  auto prepared = (*client)->call(prepare, 5000);
  ASSERT_TRUE(prepared.isOk()) << prepared.status().toString();

  proto::Envelope beat;
  beat.mutable_gang()->set_job_id("held");
  beat.mutable_gang()->set_from_agent("a2");
  {
    // Read, not refused: the agent answers that it has no gang for the job yet.
    auto as_job = AgentConnection::connect(context_, endpoint_, *job_keys);
    ASSERT_TRUE(as_job.isOk());
    auto reply = (*as_job)->call(beat, 5000);
    ASSERT_FALSE(reply.isOk());
    EXPECT_EQ(reply.status().code(), ErrorCode::kNotFound) << reply.status().toString();
  }

  proto::Envelope stop;
  stop.mutable_stop_job()->set_job_id("held");
  auto stopped = (*client)->call(stop, 5000);
  ASSERT_TRUE(stopped.isOk()) << stopped.status().toString();
  // The key goes on the agent's next turn, moments after its answer to the stop.
  Status last;
  for (int i = 0; i < 20; ++i) {
    auto as_job = AgentConnection::connect(context_, endpoint_, *job_keys);
    ASSERT_TRUE(as_job.isOk());
    auto reply = (*as_job)->call(beat, 1000);
    last = reply.status();
    if (last.code() == ErrorCode::kUnauthorized) break;
  }
  EXPECT_EQ(last.code(), ErrorCode::kUnauthorized) << last.toString();
  EXPECT_NE(last.message().find("rejected this client's key"), std::string::npos)
      << last.toString();
  expectAuthorizedClientStillServed();
}

TEST_F(SecurityTest, GarbageFramesNeverCrashTheAgent) {
  // An authorized peer sending garbage: every request gets an error or nothing; the agent lives.
  void* socket = zmq_socket(context_.get(), ZMQ_DEALER);
  int linger = 0, timeout = 1000;
  zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof linger);
  zmq_setsockopt(socket, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
  zmq_setsockopt(socket, ZMQ_CURVE_SERVERKEY, endpoint_.server_key.c_str(), 40);
  zmq_setsockopt(socket, ZMQ_CURVE_PUBLICKEY, authorized_.public_key.c_str(), 40);
  zmq_setsockopt(socket, ZMQ_CURVE_SECRETKEY, authorized_.secret_key.c_str(), 40);
  ASSERT_EQ(zmq_connect(socket, endpoint_.endpoint.c_str()), 0);

  std::mt19937 rng(42);
  std::vector<std::string> frames = {"", std::string(1, '\0'), "garbage",
                                     std::string(1000, '\xff')};
  proto::Envelope valid = inventoryRequest();
  valid.set_request_id(7);
  std::string encoded = protocol::encode(valid);
  for (size_t cut = 1; cut < encoded.size(); ++cut) frames.push_back(encoded.substr(0, cut));
  proto::Envelope future = valid;
  future.set_version(99);
  std::string future_frame;
  future.SerializeToString(&future_frame);
  frames.push_back(future_frame);
  for (int i = 0; i < 200; ++i) {
    std::string random(static_cast<size_t>(rng() % 512), '\0');
    for (auto& c : random) c = static_cast<char>(rng());
    frames.push_back(random);
  }
  int errors = 0;
  for (const auto& frame : frames) {
    zmq_send(socket, frame.data(), frame.size(), 0);
  }
  // A two-frame message and an oversized-but-allowed frame, too.
  zmq_send(socket, "a", 1, ZMQ_SNDMORE);
  zmq_send(socket, "b", 1, 0);
  char buffer[4096];
  int n;
  while ((n = zmq_recv(socket, buffer, sizeof buffer, 0)) >= 0) {
    auto reply = protocol::decode(buffer, static_cast<size_t>(std::min<int>(n, sizeof buffer)));
    if (reply.isOk() && reply->has_error()) ++errors;
  }
  EXPECT_GT(errors, 0) << "bad requests should be answered with errors";
  zmq_close(socket);
  expectAuthorizedClientStillServed();
}

// authorized_keys lines: "KEY [role=admin|role=user] [comment]"; a line without a role (as
// before roles) is an admin, an unknown role is a bad line and grants nothing.
TEST(AuthorizedKeysTest, LinesCarryARoleAndAuthorizeChangesIt) {
  TempDir dir;
  const std::string path = dir.path() + "/authorized_keys";
  std::vector<security::KeyPair> keys;
  for (int i = 0; i < 4; ++i) keys.push_back(*security::generateKeyPair());
  writeFile(path, "# team\n" + keys[0].public_key + " alice laptop\n" + keys[1].public_key +
                      " role=user bob\n" + keys[2].public_key + " role=root mallory\n");
  std::vector<int> bad_lines;
  auto read = security::readAuthorizedKeys(path, &bad_lines);
  ASSERT_TRUE(read.isOk());
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].role, security::Role::kAdmin);
  EXPECT_EQ((*read)[0].comment, "alice laptop");
  EXPECT_EQ((*read)[1].role, security::Role::kUser);
  EXPECT_EQ((*read)[1].comment, "bob");
  EXPECT_EQ(bad_lines, std::vector<int>{4});

  security::AuthorizeOutcome outcome{};
  ASSERT_TRUE(
      security::authorizeKey(path, keys[0].public_key, security::Role::kUser, "", &outcome).isOk());
  EXPECT_EQ(outcome, security::AuthorizeOutcome::kRoleChanged);
  ASSERT_TRUE(
      security::authorizeKey(path, keys[0].public_key, security::Role::kUser, "", &outcome).isOk());
  EXPECT_EQ(outcome, security::AuthorizeOutcome::kUnchanged);
  ASSERT_TRUE(
      security::authorizeKey(path, keys[3].public_key, security::Role::kUser, "carol", &outcome)
          .isOk());
  EXPECT_EQ(outcome, security::AuthorizeOutcome::kAdded);
  const std::string text = readFile(path);
  EXPECT_NE(text.find("# team\n" + keys[0].public_key + " role=user alice laptop\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(keys[2].public_key + " role=root mallory\n"), std::string::npos);
  EXPECT_NE(text.find(keys[3].public_key + " role=user carol\n"), std::string::npos);
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

}  // namespace
}  // namespace ringmaster::testing

// An authorized but careless or hostile client cannot make the agent run what it did not check,
// run out of descriptors, or guess job ids (issue 8). A real agent on loopback.
#include <arpa/inet.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "harness.h"
#include "ringmaster/client/agent_connection.h"
#include "ringmaster/net/socket_options.h"
#include "ringmaster/protocol/codec.h"
#include "ringmaster/security/keys.h"

namespace ringmaster::testing {
namespace {

using client::AgentConnection;
using client::AgentEndpoint;
using client::callAll;
using client::Patience;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class HardeningTest : public ::testing::Test {
 protected:
  // The test's temp dir (0700) must let ranks of another user through to their job's directory.
  void letRanksThrough() {
    for (const std::string& dir : {cluster_.dir(), cluster_.dir() + "/agents"}) {
      std::filesystem::create_directories(dir);
      std::filesystem::permissions(dir, std::filesystem::perms::others_exec,
                                   std::filesystem::perm_options::add);
    }
  }
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(cluster_.addAgent("a1", 2, &error)) << error;
    auto keys = security::loadOrCreateKeyPair(cluster_.configDir() + "/client.key");
    ASSERT_TRUE(keys.isOk());
    keys_ = *keys;
    connection_ = connect();
    ASSERT_TRUE(connection_);
  }

  // A finished one-rank job on a1 whose log is 60 MB (for reads of 16 MB); its id, "" on failure.
  std::string runJobWithA60MbLog() {
    const std::string spec = cluster_.writeSpec(
        "big.yaml",
        "name: big\nlauncher: command\n"
        "command: [/bin/sh, -c, 'head -c 60000000 /dev/zero | tr \"\\0\" x | fold -w 200']\n"
        "placement: [{agent: a1, ranks: 1}]\n");
    auto big = cluster_.ctl({"submit", spec, "--wait"});
    EXPECT_EQ(big.exit_code, 0) << big.err;
    return big.exit_code == 0 ? big.firstLine() : "";
  }
  std::unique_ptr<AgentConnection> connect() {
    auto connection = AgentConnection::connect(
        context_, {"a1", cluster_.agent("a1").endpoint(), cluster_.agent("a1").publicKey()}, keys_);
    return connection.isOk() ? std::move(*connection) : nullptr;
  }

  // A two-rank command launch on a1 as a client could send it, checks left out.
  proto::Envelope launch(const std::string& job_id) {
    proto::Envelope request;
    proto::JobLaunch* job = request.mutable_launch_job()->mutable_launch();
    job->set_job_id(job_id);
    job->set_name("hostile");
    job->set_attempt(1);
    job->set_launcher(proto::COMMAND);
    job->add_argv("/bin/true");
    job->set_world_size(2);
    for (int rank : {0, 1}) job->add_ranks()->set_rank(rank);
    return request;
  }
  // The environment of another person's ringmasterctl (a key of its own and a history of its
  // own), authorized on `agent` with role user; empty when it could not be authorized.
  std::map<std::string, std::string> anotherPersonOn(const std::string& agent) {
    std::map<std::string, std::string> other = cluster_.env();
    other["RINGMASTER_CONFIG_DIR"] = cluster_.dir() + "/other-config";
    other["RINGMASTER_DB"] = cluster_.dir() + "/other.db";
    const std::string key = runCommand({binPath("ringmasterctl"), "keys"}, other).firstLine();
    const int authorized = runCommand({binPath("ringmaster-agent"), "authorize", "--role", "user",
                                       "--state-dir", cluster_.agent(agent).stateDir(), "--", key})
                               .exit_code;
    return authorized == 0 ? other : std::map<std::string, std::string>{};
  }
  // The output of `ringmasterctl args` once it holds `text` (within `timeout`), else the last.
  std::string ctlOutputWith(const std::vector<std::string>& args, const std::string& text,
                            std::chrono::seconds timeout) {
    std::string out;
    waitUntil(
        [&] {
          out = cluster_.ctl(args).out;
          return out.find(text) != std::string::npos;
        },
        timeout);
    return out;
  }

  // The agent's error for `request`; "" when it was accepted.
  std::string refusal(const proto::Envelope& request) {
    auto reply = connection_->call(request, 5000);
    if (reply.isOk()) return "";
    return reply.status().message();
  }

  Cluster cluster_;
  client::ZmqContext context_;
  security::KeyPair keys_;
  std::unique_ptr<AgentConnection> connection_;
};

TEST_F(HardeningTest, ALaunchWithARankTwiceIsRefused) {
  proto::Envelope request = launch("twice");
  request.mutable_launch_job()->mutable_launch()->mutable_ranks(1)->set_rank(0);
  EXPECT_NE(refusal(request).find("rank 0 is assigned twice"), std::string::npos);
}

TEST_F(HardeningTest, ARelativeWorkdirIsRefused) {
  proto::Envelope request = launch("relative");
  request.mutable_launch_job()->mutable_launch()->set_workdir("tmp");
  EXPECT_NE(refusal(request).find("workdir 'tmp' is not an absolute path"), std::string::npos);
}

// "./run.sh" is the script in the job's workdir, where the rank runs, not in the agent's own
// directory: it used to be checked in one and run in the other.
TEST_F(HardeningTest, ARelativeProgramIsFoundInTheWorkdirWhereItRuns) {
  const std::string workdir = cluster_.dir() + "/work";
  std::filesystem::create_directories(workdir);
  writeFile(workdir + "/run.sh", "#!/bin/sh\necho '{\"step\": 1, \"ran_in_workdir\": 1}'\n");
  std::filesystem::permissions(workdir + "/run.sh", std::filesystem::perms::owner_all);
  const std::string agent_cwd = "/proc/" + std::to_string(cluster_.agent("a1").pid()) + "/cwd";
  ASSERT_NE(::access((agent_cwd + "/run.sh").c_str(), F_OK), 0);

  proto::Envelope request = launch("relative-program");
  proto::JobLaunch* job = request.mutable_launch_job()->mutable_launch();
  job->set_argv(0, "./run.sh");
  job->set_workdir(workdir);
  EXPECT_EQ(refusal(request), "");
  proto::Envelope elsewhere = launch("relative-program-elsewhere");
  elsewhere.mutable_launch_job()->mutable_launch()->set_argv(0, "./run.sh");
  EXPECT_NE(refusal(elsewhere).find("command './run.sh' not found"), std::string::npos);
}

TEST_F(HardeningTest, TheAgentRaisesItsOpenFileLimitToTheHardLimit) {
  // An agent started with the usual soft limit of 1024 (it inherits this process's).
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max <= 1024) GTEST_SKIP() << "the hard open-file limit here is 1024 or less";
  rlimit low = saved;
  low.rlim_cur = 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::string error;
  const bool started = cluster_.addAgent("a2", 1, &error);
  ::setrlimit(RLIMIT_NOFILE, &saved);
  ASSERT_TRUE(started) << error;

  const std::string limits =
      readFile("/proc/" + std::to_string(cluster_.agent("a2").pid()) + "/limits");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(limits, match, std::regex(R"(Max open files\s+(\d+)\s+(\d+))")))
      << limits;
  EXPECT_EQ(std::stoul(match[1].str()), saved.rlim_max) << limits;
  EXPECT_EQ(match[1].str(), match[2].str()) << limits;
}

// Job ids name what a client may stop or read: 16 random hex digits (64 bits), never repeated.
TEST_F(HardeningTest, JobIdsCarry64RandomBits) {
  const std::string spec = cluster_.writeSpec(
      "tiny.yaml",
      "name: tiny\nlauncher: command\ncommand: [/bin/true]\nplacement: [{agent: a1, "
      "ranks: 1}]\n");
  std::set<std::string> suffixes;
  for (int i = 0; i < 3; ++i) {
    auto submitted = cluster_.ctl({"submit", spec});
    ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
    std::smatch match;
    const std::string id = submitted.firstLine();
    ASSERT_TRUE(std::regex_match(id, match, std::regex(R"(tiny-\d{6}-\d{6}-([0-9a-f]{16}))")))
        << id;
    suffixes.insert(match[1].str());
  }
  EXPECT_EQ(suffixes.size(), 3u);
}

// The agent's resident memory, from /proc.
int64_t residentBytes(pid_t pid) {
  const std::string status = readFile("/proc/" + std::to_string(pid) + "/status");
  std::smatch match;
  if (!std::regex_search(status, match, std::regex(R"(VmRSS:\s+(\d+) kB)"))) return -1;
  return std::stoll(match[1].str()) * 1024;
}

// 120 requests for 16 MB of a 60 MB log, none read: the agent queues at most 8 replies for a
// client and drops the rest. It used to hold them all (1.1 GB). Then such clients killed
// mid-reply, 20 times: the agent and a running job go on.
TEST_F(HardeningTest, UnreadRepliesStayUnderAMemoryBoundAndKilledClientsHarmNothing) {
  const std::string job = runJobWithA60MbLog();
  ASSERT_FALSE(job.empty());
  const std::string sleeper = cluster_.writeSpec(
      "sleeper.yaml",
      "name: sleeper\nlauncher: command\ncommand: [/bin/sleep, '60']\nplacement: [{agent: a1, "
      "ranks: 1}]\n");
  auto running = cluster_.ctl({"submit", sleeper});
  ASSERT_EQ(running.exit_code, 0) << running.err;

  const pid_t agent = cluster_.agent("a1").pid();
  const std::vector<std::string> flood = {binPath("flood_client"),
                                          cluster_.agent("a1").endpoint(),
                                          cluster_.agent("a1").publicKey(),
                                          cluster_.configDir() + "/client.key",
                                          job,
                                          "120"};
  int64_t peak = 0;
  std::thread client([&] { runCommand(flood, {}, 6000); });  // killed after 6 s
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(6);
       std::chrono::steady_clock::now() < until;) {
    peak = std::max(peak, residentBytes(agent));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  client.join();
  // 8 replies of 16 MB, each held twice while it is encoded and sent, and the agent itself.
  // (Under AddressSanitizer freed memory is held in quarantine: no bound then.)
  constexpr int64_t kBound = 400ll << 20;
#ifndef __SANITIZE_ADDRESS__
  EXPECT_LT(peak, kBound) << "peak RSS " << (peak >> 20) << " MiB";
#endif
  std::printf("peak agent RSS under an unread-reply flood: %lld MiB\n",
              static_cast<long long>(peak >> 20));

  for (int i = 0; i < 20; ++i) runCommand(flood, {}, 100 + 40 * i);  // killed mid-reply
  EXPECT_TRUE(cluster_.agent("a1").alive());
  proto::Envelope inventory;
  inventory.mutable_inventory_request();
  // A new connection each time: one that was open through the flood may have been dropped by
  // its ZMTP heartbeat and wait out libzmq's reconnect backoff (up to 30 s), which says nothing
  // about the agent. The job is still among its running jobs.
  const auto killed = std::chrono::steady_clock::now();
  const std::string sleeper_id = running.firstLine();
  bool job_running = false;
  EXPECT_TRUE(waitUntil(
      [&] {
        auto fresh = connect();
        auto reply =
            fresh ? fresh->call(inventory, 2000) : Result<proto::Envelope>(unavailable(""));
        if (!reply.isOk()) return false;
        const auto& jobs = reply->inventory().running_jobs();
        job_running = std::find(jobs.begin(), jobs.end(), sleeper_id) != jobs.end();
        return true;
      },
      std::chrono::seconds(30)));
  std::printf("the agent answered a new client %.1f s after the last kill\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count());
  EXPECT_TRUE(job_running);
  cluster_.ctl({"stop", running.firstLine()});
}

// One key over 16, then 64 connections, each asking for 16 MB of a log 8 times and reading
// nothing: the agent holds what one key's unread replies may hold (ReplyBudget), answers the rest
// with errors, and meanwhile answers another connection's inventory promptly. It used to hold
// 1.9 GB with 16 connections.
TEST_F(HardeningTest, UnreadRepliesOfOneKeyOverManyConnectionsStayUnderABound) {
  const std::string job = runJobWithA60MbLog();
  ASSERT_FALSE(job.empty());
  const pid_t agent = cluster_.agent("a1").pid();
  proto::Envelope inventory;
  inventory.mutable_inventory_request();
  for (const int connections : {16, 64}) {
    const std::vector<std::string> flood = {binPath("flood_client"),
                                            cluster_.agent("a1").endpoint(),
                                            cluster_.agent("a1").publicKey(),
                                            cluster_.configDir() + "/client.key",
                                            job,
                                            "8",
                                            std::to_string(connections)};
    int64_t peak = 0;
    double slowest_ms = 0;
    int answered = 0;
    auto other = connect();
    ASSERT_NE(other, nullptr);
    std::thread client([&] { runCommand(flood, {}, 8000); });  // killed after 8 s
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(8);
         std::chrono::steady_clock::now() < until;) {
      peak = std::max(peak, residentBytes(agent));
      const auto asked = std::chrono::steady_clock::now();
      if (other->call(inventory, 5000).isOk()) ++answered;
      slowest_ms = std::max(slowest_ms, std::chrono::duration<double, std::milli>(
                                            std::chrono::steady_clock::now() - asked)
                                            .count());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    client.join();
    std::printf(
        "%d connections of one key reading nothing: peak agent RSS %lld MiB, another "
        "connection's inventory answered %d times, the slowest in %.0f ms\n",
        connections, static_cast<long long>(peak >> 20), answered, slowest_ms);
#ifndef __SANITIZE_ADDRESS__
    EXPECT_LT(peak, 512ll << 20) << connections << " connections";
#endif
    EXPECT_GT(answered, 10);
    // Measured here: 16 connections 91-97 ms, 64 connections 169-175 ms (2 libzmq I/O threads,
    // reads answered after cheap requests and refused before they read; 220-340 ms before
    // those, 3.4 s before the budget), on 2 cores shared with the flood's own 64 handshakes.
    // On a 2-core AMD EPYC VM (page faults ~10x dearer) 65-879 ms, 1,740-3,074 ms while a
    // build shared the cores; since replies reuse heap pages and a key queues 64 MiB (2026-11-30)
    // 16-290 ms, 152-284 ms beside two busy loops. Loose, for regressions on loaded machines.
    EXPECT_LT(slowest_ms, 2000);
    EXPECT_TRUE(cluster_.agent("a1").alive());
  }
  EXPECT_NE(cluster_.agent("a1").stderrText().find("too many replies unread by this key"),
            std::string::npos);
}

// One message of 20 frames of 60 MB each (libzmq limits frames, not messages) used to take the
// agent to 1.2 GB. Requests are one frame of at most 8 MiB now: the first frame's header closes
// the connection, before anything is held. A client refuses to send such a request itself.
TEST_F(HardeningTest, AMessageOfLargeFramesIsRefusedBeforeItIsHeld) {
  const pid_t agent = cluster_.agent("a1").pid();
  const int64_t before = residentBytes(agent);
  void* socket = zmq_socket(context_.get(), ZMQ_DEALER);
  ASSERT_TRUE(net::makeCurveClient(socket, keys_, cluster_.agent("a1").publicKey()).isOk());
  int linger = 0, timeout_ms = 10000;
  zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof linger);
  zmq_setsockopt(socket, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms);
  ASSERT_EQ(zmq_connect(socket, cluster_.agent("a1").endpoint().c_str()), 0);
  static const std::string frame(60u << 20, 'x');
  int64_t peak = before;
  for (int i = 0; i < 20; ++i) {
    zmq_msg_t message;
    zmq_msg_init_data(&message, const_cast<char*>(frame.data()), frame.size(), nullptr, nullptr);
    zmq_msg_send(&message, socket, i + 1 < 20 ? ZMQ_SNDMORE : 0);
    zmq_msg_close(&message);
  }
  for (int i = 0; i < 100; ++i) {  // 2 s: the sender pushes what the agent will take
    peak = std::max(peak, residentBytes(agent));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  zmq_close(socket);
  std::printf("agent RSS %lld MiB before, peak %lld MiB while 20 x 60 MB frames were sent\n",
              static_cast<long long>(before >> 20), static_cast<long long>(peak >> 20));
  EXPECT_LT(peak - before, 64ll << 20);
  EXPECT_TRUE(cluster_.agent("a1").alive());
  proto::Envelope inventory;
  inventory.mutable_inventory_request();
  EXPECT_TRUE(connection_->call(inventory, 5000).isOk());

  // The client side: a launch over the limit names the limit instead of losing its connection.
  proto::Envelope big = launch("big-request");
  big.mutable_launch_job()->mutable_launch()->set_spec_yaml(std::string(9u << 20, '#'));
  const std::string error = refusal(big);
  EXPECT_NE(error.find("larger than the 8 MiB an agent accepts"), std::string::npos) << error;
  EXPECT_TRUE(connection_->call(inventory, 5000).isOk());
}

// 1,100 idle TCP connections that never begin a handshake used to take every descriptor of an
// agent with the usual limit of 1024: a submit failed with "Too many open files". Now they cost
// the agent nothing it needs, libzmq drops each after 5 s without a handshake, and each refusal
// is logged, at most 20 lines per 10 s.
TEST_F(HardeningTest, IdleUnauthenticatedConnectionsLeaveAnAuthorizedSubmitWorking) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_max < 1400) GTEST_SKIP() << "this process may not open 1,100 connections";
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
  const std::string endpoint = cluster_.agent("a1").endpoint();
  const int port = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::vector<int> idle;
  for (int i = 0; i < 1100; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0) << i;
    idle.push_back(fd);
  }
  const std::string spec = cluster_.writeSpec(
      "ok.yaml",
      "name: ok\nlauncher: command\ncommand: [/bin/true]\nplacement: [{agent: a1, ranks: 1}]\n");
  auto submitted = cluster_.ctl({"submit", spec, "--wait"});
  EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
  // Host health is still measured (a failed sampler would have read 0).
  proto::Envelope inventory;
  inventory.mutable_inventory_request();
  auto reply = connection_->call(inventory, 5000);
  ASSERT_TRUE(reply.isOk()) << reply.status().toString();
  EXPECT_GT(reply->inventory().health().memory_total_bytes(), 0u);

  // Dropped by the agent after 5 s: each socket reads libzmq's greeting, then end of file.
  auto closedByTheAgent = [](int fd) {
    char buffer[256];
    ssize_t n;
    while ((n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT)) > 0) {
    }
    return n == 0;
  };
  EXPECT_TRUE(waitUntil(
      [&] {
        std::erase_if(idle, [&](int fd) { return closedByTheAgent(fd) && ::close(fd) == 0; });
        return idle.empty();
      },
      std::chrono::seconds(15)))
      << idle.size() << " connection(s) still open";
  for (int fd : idle) ::close(fd);
  const std::string log = cluster_.agent("a1").stderrText();
  size_t lines = 0;
  for (size_t at = log.find("refused a connection from 127.0.0.1:"); at != std::string::npos;
       at = log.find("refused a connection from 127.0.0.1:", at + 1)) {
    ++lines;
  }
  std::printf("%zu refusal line(s) logged for 1,100 idle connections\n", lines);
  EXPECT_GE(lines, 1u);
  EXPECT_LE(lines, 40u);
}

// A client waits for an agent that is alive but too busy to answer in time (its connection stays
// up: libzmq's heartbeats are answered), saying which one it waits for; an agent that stops for
// good drops the connection within seconds and is named as such, not waited for to the bound.
TEST_F(HardeningTest, ABusyAgentIsWaitedForAndAStoppedOneIsNamedSoon) {
  std::vector<proto::Envelope> requests(1);
  requests[0].mutable_inventory_request();
  ASSERT_TRUE(connection_->call(requests[0], 5000).isOk());  // the connection is up
  const pid_t agent = cluster_.agent("a1").pid();
  std::atomic<bool> slowing{true};
  ASSERT_EQ(::kill(agent, SIGSTOP), 0);
  std::thread bursts([&] {  // stopped 2 s, running 30 ms: its main loop gets little time
    while (slowing) {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      ::kill(agent, SIGCONT);
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      if (slowing) ::kill(agent, SIGSTOP);
    }
  });
  Patience patience;
  patience.bound_ms = 20000;
  patience.report_every_ms = 200;
  std::vector<std::string> waited_for;
  patience.waiting = [&](const std::vector<std::string>& agents, size_t of, int64_t) {
    EXPECT_EQ(of, 1u);
    waited_for = agents;
  };
  const auto asked = std::chrono::steady_clock::now();
  auto busy = callAll({connection_.get()}, requests, 500, patience);
  const double busy_s = secondsSince(asked);
  slowing = false;
  bursts.join();
  ::kill(agent, SIGCONT);
  ASSERT_TRUE(busy[0].isOk()) << busy[0].status().toString();
  EXPECT_GT(busy_s, 0.5);
  EXPECT_EQ(waited_for, std::vector<std::string>{"a1"});

  ASSERT_EQ(::kill(agent, SIGSTOP), 0);
  const auto stopped_at = std::chrono::steady_clock::now();
  auto stopped = callAll({connection_.get()}, requests, 500, patience);
  const double stopped_s = secondsSince(stopped_at);
  ::kill(agent, SIGCONT);
  ASSERT_FALSE(stopped[0].isOk());
  EXPECT_NE(stopped[0].status().message().find("dropped the connection"), std::string::npos)
      << stopped[0].status().toString();
  EXPECT_LT(stopped_s, 8.0) << "waited for a stopped agent as if it were busy";
  std::printf("busy agent answered after %.1f s; stopped agent named after %.1f s\n", busy_s,
              stopped_s);
}

// The ranks' rendezvous credential is their attempt's: once the attempt is over it opens
// nothing, on a new connection or on one it kept open, and it could not write the next
// attempt's keys. Clients' own keys cannot read a job's store either.
TEST_F(HardeningTest, AnEndedAttemptsCredentialGetsNothing) {
  const std::string dir = cluster_.dir();
  const std::string spec = cluster_.writeSpec(
      "attempts.yaml",
      "name: attempts\nlauncher: command\n"
      "command: [/bin/sh, -c, 'env | grep RINGMASTER_RENDEZVOUS_ > " +
          dir +
          "/cred-$RINGMASTER_ATTEMPT; echo SECRET_KEY=$(cat "
          "\"$RINGMASTER_RENDEZVOUS_SECRET_KEY_FILE\")"
          " >> " +
          dir +
          "/cred-$RINGMASTER_ATTEMPT; [ \"$RINGMASTER_ATTEMPT\" = 1 ] && exit 3; sleep 60']\n"
          "placement: [{agent: a1, ranks: 1}]\n"
          "restart: {max_restarts: 1, backoff_seconds: 0}\n");
  // A connection with attempt 1's credential, opened while attempt 1 is current.
  auto credential = [&](int attempt) -> std::optional<security::KeyPair> {
    const std::string text = readFile(dir + "/cred-" + std::to_string(attempt));
    std::smatch pub, sec;
    if (!std::regex_search(text, pub, std::regex("PUBLIC_KEY=(\\S{40})")) ||
        !std::regex_search(text, sec, std::regex("SECRET_KEY=(\\S{40})"))) {
      return std::nullopt;
    }
    return security::KeyPair{pub[1].str(), sec[1].str()};
  };
  auto submitted = cluster_.ctl({"submit", spec});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job = submitted.firstLine();
  ASSERT_TRUE(waitUntil([&] { return credential(2).has_value(); }, std::chrono::seconds(30)))
      << cluster_.ctl({"status", job}).out;
  ASSERT_TRUE(credential(1).has_value());
  EXPECT_NE(credential(1)->public_key, credential(2)->public_key);

  proto::Envelope set;
  set.mutable_rendezvous_set()->set_job_id(job);
  set.mutable_rendezvous_set()->set_key("attempt-2/addr");
  set.mutable_rendezvous_set()->set_value("10.6.6.6:666");
  const AgentEndpoint agent{"a1", cluster_.agent("a1").endpoint(),
                            cluster_.agent("a1").publicKey()};
  // Attempt 1's credential: refused at the handshake, as if unknown.
  auto stale = AgentConnection::connect(context_, agent, *credential(1));
  ASSERT_TRUE(stale.isOk());
  auto refused = (*stale)->call(set, 3000);
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), ErrorCode::kUnauthorized) << refused.status().toString();
  // Attempt 2's works while attempt 2 runs...
  auto current = AgentConnection::connect(context_, agent, *credential(2));
  ASSERT_TRUE(current.isOk());
  ASSERT_TRUE((*current)->call(set, 5000).isOk());
  // ...and a client's key may not read the store.
  proto::Envelope get;
  get.mutable_rendezvous_get()->set_job_id(job);
  get.mutable_rendezvous_get()->set_key("attempt-2/addr");
  auto read = connection_->call(get, 5000);
  ASSERT_FALSE(read.isOk());
  EXPECT_NE(read.status().message().find("rendezvous store is for its ranks only"),
            std::string::npos)
      << read.status().toString();

  // The job ends: attempt 2's open connection gets nothing more, and is closed.
  ASSERT_EQ(cluster_.ctl({"stop", job}).exit_code, 0);
  ASSERT_TRUE(waitUntil(
      [&] {
        return cluster_.ctl({"status", job}).out.find("running") == std::string::npos;
      },
      std::chrono::seconds(20)));
  auto after = (*current)->call(set, 3000);
  ASSERT_FALSE(after.isOk());
  EXPECT_NE(after.status().code(), ErrorCode::kOk);
  EXPECT_TRUE(waitUntil(
      [&] {
        return cluster_.agent("a1").stderrText().find("connection(s) of attempt:" + job + ":2") !=
               std::string::npos;
      },
      std::chrono::seconds(5)))
      << cluster_.agent("a1").stderrText();
}

// An agent run as root gives its ranks to the --run-as user: they cannot read its key or list
// its journal, and no setuid program gets them back; they write their checkpoints, dump no
// core (it would hold the job's credential) and have the open-file limit the agent sets.
TEST_F(HardeningTest, ARootAgentsRanksRunAsTheRunAsUserAndCannotReadItsKey) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: only a root agent switches user";
  const passwd* nobody = ::getpwnam("nobody");
  if (nobody == nullptr) GTEST_SKIP() << "no user 'nobody' here";
  letRanksThrough();
  std::string error;
  ASSERT_TRUE(
      cluster_.addAgent("a2", 1, &error, {"--run-as", "nobody", "--rank-open-files", "4096"}))
      << error;
  const std::string state = cluster_.agent("a2").stateDir();
  const std::string spec = cluster_.writeSpec(
      "confined.yaml",
      "name: confined\nlauncher: command\n"
      "command: [/bin/sh, -c, 'id -u; cat " +
          state + "/agent.key && echo READ-KEY; ls " + state +
          "/journal && echo LISTED-JOURNAL; ls " + state +
          " && echo LISTED-STATE; echo x > \"$RINGMASTER_CHECKPOINT_DIR/x\" && echo "
          "WROTE-CHECKPOINT; echo \"core $(ulimit -c) files $(ulimit -n) home $HOME\"; grep "
          "NoNewPrivs /proc/self/status']\n"
          "placement: [{agent: a2, ranks: 1}]\n");
  auto submitted = cluster_.ctl({"submit", spec, "--wait"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string log = cluster_.ctl({"logs", submitted.firstLine()}).out;
  EXPECT_NE(log.find(std::to_string(nobody->pw_uid) + "\n"), std::string::npos) << log;
  EXPECT_EQ(log.find("READ-KEY"), std::string::npos) << log;
  EXPECT_EQ(log.find("LISTED-JOURNAL"), std::string::npos) << log;
  EXPECT_EQ(log.find("LISTED-STATE"), std::string::npos) << log;
  EXPECT_NE(log.find("WROTE-CHECKPOINT"), std::string::npos) << log;
  EXPECT_NE(log.find("core 0 files 4096 home " + std::string(nobody->pw_dir)), std::string::npos)
      << log;
  EXPECT_TRUE(std::regex_search(log, std::regex("NoNewPrivs:\\s+1"))) << log;
}

// --job-uids: each job's ranks run as a uid of their own, so a rank of job A (another person's,
// submitted with another key) can neither signal job B's rank nor read or write B's checkpoints;
// when B is over its files are the agent's again.
TEST_F(HardeningTest, EachJobRunsAsAUserOfItsOwnAndCannotTouchAnother) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: only a root agent switches user";
  letRanksThrough();
  std::string error;
  ASSERT_TRUE(cluster_.addAgent("a2", 2, &error, {"--job-uids", "1879048192-1879048195"})) << error;
  EXPECT_NE(cluster_.agent("a2").stderrText().find("each job's ranks run as a user of their own"),
            std::string::npos)
      << cluster_.agent("a2").stderrText();

  // Job B: keeps a secret in its checkpoints and waits.
  const std::string victim = cluster_.writeSpec(
      "victim.yaml",
      "name: victim\nlauncher: command\n"
      "command: [/bin/sh, -c, 'echo secret > \"$RINGMASTER_CHECKPOINT_DIR/secret\" && "
      "echo \"uid $(id -u) pid $$ dir $RINGMASTER_CHECKPOINT_DIR\"; sleep 120']\n"
      "placement: [{agent: a2, ranks: 1}]\n");
  auto submitted = cluster_.ctl({"submit", victim});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string victim_job = submitted.firstLine();
  std::smatch m;
  std::string log;
  ASSERT_TRUE(waitUntil(
      [&] {
        log = cluster_.ctl({"logs", victim_job}).out;
        return std::regex_search(log, m, std::regex("uid (\\d+) pid (\\d+) dir (\\S+)"));
      },
      std::chrono::seconds(20)))
      << log;
  const std::string victim_uid = m[1], victim_pid = m[2], victim_dir = m[3];
  EXPECT_GE(std::stoul(victim_uid), 1879048192u);
  EXPECT_LE(std::stoul(victim_uid), 1879048195u);

  // Job A: tries to stop B's rank, read its secret, plant a checkpoint, list its directory.
  const std::string attacker =
      cluster_.writeSpec("attacker.yaml",
                         "name: attacker\nlauncher: command\n"
                         "command: [/bin/sh, -c, 'echo uid $(id -u); kill -TERM " +
                             victim_pid + " && echo KILLED-B; cat " + victim_dir +
                             "/secret && echo READ-B; echo x > " + victim_dir +
                             "/planted && echo WROTE-B; ls " + victim_dir +
                             " && echo LISTED-B; true']\n"
                             "placement: [{agent: a2, ranks: 1}]\n");
  // Submitted by another person: a second key, authorized on a2 with role user.
  const std::map<std::string, std::string> other = anotherPersonOn("a2");
  ASSERT_FALSE(other.empty());
  auto attacked = runCommand({binPath("ringmasterctl"), "submit", attacker, "--wait"}, other);
  ASSERT_EQ(attacked.exit_code, 0) << attacked.err;
  const std::string attack_log =
      runCommand({binPath("ringmasterctl"), "logs", attacked.firstLine()}, other).out;
  EXPECT_EQ(attack_log.find("uid " + victim_uid + "\n"), std::string::npos) << attack_log;
  EXPECT_NE(attack_log.find("uid 18790481"), std::string::npos) << attack_log;
  for (const char* done : {"KILLED-B", "READ-B", "WROTE-B", "LISTED-B"}) {
    EXPECT_EQ(attack_log.find(done), std::string::npos) << done << "\n" << attack_log;
  }
  EXPECT_FALSE(std::filesystem::exists(victim_dir + "/planted"));
  EXPECT_EQ(::kill(std::stoi(victim_pid), 0), 0) << "job B's rank is gone";

  // A native job trains under its own uid too: it reads its config, writes its phase file and
  // checkpoints.
  const std::string native = cluster_.writeSpec(
      "native.yaml",
      "name: native\nlauncher: native\nplacement: [{agent: a2, ranks: 1}]\nnative:\n"
      "  model: {kind: mlp, hidden: [16], activation: relu, task: classification}\n"
      "  dataset: {kind: synthetic, samples: 512, features: 8, classes: 2, seed: 3}\n"
      "  batch_size: 32\n  epochs: 1\n  optimizer: {name: sgd, lr: 0.05}\n"
      "  checkpoint: {every_steps: 8}\n");
  auto trained = cluster_.ctl({"submit", native, "--wait"});
  EXPECT_EQ(trained.exit_code, 0) << trained.out << trained.err;
  const std::string saved =
      cluster_.ctl({"metrics", trained.firstLine(), "--name", "checkpoint"}).out;
  EXPECT_NE(saved.find("checkpoint"), std::string::npos) << saved;

  // B over: its uid owns nothing any more, and no process runs as it.
  ASSERT_EQ(cluster_.ctl({"stop", victim_job, "--wait"}).exit_code, 0);
  struct stat st {};
  ASSERT_EQ(::stat((victim_dir + "/secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  const std::string agent_dir = victim_dir.substr(0, victim_dir.rfind("/checkpoints"));
  ASSERT_EQ(::stat(agent_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);  // the job's directory itself was never the ranks'
  EXPECT_EQ(st.st_mode & 0777, 0711u);
}

// --job-processes: a job's uid may have so many processes and threads at once; a rank that forks
// without end gets EAGAIN inside its own job (it used to fork 1,500 children freely, NPROC 96,364
// a uid), and the next job on that uid starts as usual.
TEST_F(HardeningTest, AJobCannotForkPastItsProcessLimit) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the limit is the job uid's";
  letRanksThrough();
  std::string error;
  ASSERT_TRUE(cluster_.addAgent("a2", 2, &error,
                                {"--job-uids", "1879048192-1879048192", "--job-processes", "24"}))
      << error;
  EXPECT_NE(cluster_.agent("a2").stderrText().find("at most 24 processes and threads a job"),
            std::string::npos)
      << cluster_.agent("a2").stderrText();
  const std::string forker = cluster_.writeSpec(
      "forker.yaml",
      "name: forker\nlauncher: command\n"
      "command: [/bin/sh, -c, 'for i in $(seq 1 100); do sleep 30 & done; echo all started']\n"
      "placement: [{agent: a2, ranks: 1}]\n");
  auto run = cluster_.ctl({"submit", forker, "--wait"}, 120000);
  const std::string log = cluster_.ctl({"logs", run.firstLine()}).out;
  // dash says "Cannot fork" and gives up: the 25th process was refused.
  EXPECT_NE(log.find("Cannot fork"), std::string::npos) << log;
  EXPECT_EQ(log.find("all started"), std::string::npos) << log;
  EXPECT_NE(run.exit_code, 0) << run.out;
  // The uid is clean again for the next job, which starts.
  const std::string next =
      cluster_.writeSpec("next.yaml",
                         "name: next\nlauncher: command\ncommand: [/bin/echo, fine]\n"
                         "placement: [{agent: a2, ranks: 1}]\n");
  auto second = cluster_.ctl({"submit", next, "--wait"}, 60000);
  EXPECT_EQ(second.exit_code, 0) << second.out << second.err;
}

// A process of `uid` that nobody's agent started (a user's own, a service's): sleeps until killed.
pid_t startProcessAs(uid_t uid) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(126);
    ::execl("/bin/sleep", "sleep", "600", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}
// Whether the process `pid` (our child) still runs: not ended, not a zombie.
bool stillRuns(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) == 0;
}
// Whether any System V IPC object (shared memory, queue, semaphore set) names `uid`.
bool ipcObjectOf(uid_t uid) {
  for (const char* table : {"/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem"}) {
    std::istringstream lines(readFile(table));
    std::string line, word;
    std::getline(lines, line);  // the header
    while (std::getline(lines, line)) {
      std::istringstream words(line);
      while (words >> word) {
        if (word == std::to_string(uid)) return true;
      }
    }
  }
  return false;
}

// Issue 34's reuse attack, with an agent restart between the jobs and three jobs over two uids:
// job A leaves files in /tmp, /var/tmp and /dev/shm (mode 0600) and System V IPC objects; job B
// and job C, another person's, find none of it although one of them runs as A's uid. A process
// of a uid of the range that the agent did not start (started before it) is neither used nor
// killed, through the jobs and the restart.
TEST_F(HardeningTest, AUidCarriesNothingToTheNextJobAndAProcessOfTheRangeIsLeftAlone) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: only a root agent switches user";
  letRanksThrough();
  constexpr uid_t kFirst = 1879048300;
  const pid_t bystander = startProcessAs(kFirst + 1);
  ASSERT_GT(bystander, 0);
  ASSERT_TRUE(waitUntil(
      [&] {
        return readFile("/proc/" + std::to_string(bystander) + "/status")
                   .find(std::to_string(kFirst + 1)) != std::string::npos;
      },
      std::chrono::seconds(5)));
  std::string error;
  ASSERT_TRUE(cluster_.addAgent(
      "a2", 2, &error, {"--job-uids", std::to_string(kFirst) + "-" + std::to_string(kFirst + 2)}))
      << error;
  const std::string tag = std::to_string(::getpid());
  const std::string a_files =
      "/tmp/rm-a-" + tag + " /var/tmp/rm-a-" + tag + " /dev/shm/rm-a-" + tag;
  const std::string job_a = cluster_.writeSpec(
      "a.yaml",
      "name: a\nlauncher: command\n"
      "command: [/bin/sh, -c, 'echo uid $(id -u); for f in " +
          a_files +
          "; do echo secret > $f && chmod 600 $f; done; ipcmk -M 4096 && ipcmk -Q && "
          "ipcmk -S 1 && echo LEFT-IPC']\n"
          "placement: [{agent: a2, ranks: 1}]\n");
  auto a = cluster_.ctl({"submit", job_a, "--wait"});
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  const std::string a_log = cluster_.ctl({"logs", a.firstLine()}).out;
  ASSERT_NE(a_log.find("LEFT-IPC"), std::string::npos) << a_log;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(a_log, m, std::regex("uid (\\d+)"))) << a_log;
  const uid_t a_uid = std::stoul(m[1]);
  // Released with its job: nothing of A is left under its uid.
  for (const char* dir : {"/tmp", "/var/tmp", "/dev/shm"}) {
    EXPECT_FALSE(std::filesystem::exists(std::string(dir) + "/rm-a-" + tag)) << dir;
  }
  EXPECT_FALSE(ipcObjectOf(a_uid));

  ASSERT_TRUE(cluster_.crashAndRestartAgent("a2", &error)) << error;

  // B and C: another key's jobs look for A's files; each says its uid.
  const std::map<std::string, std::string> other = anotherPersonOn("a2");
  ASSERT_FALSE(other.empty());
  std::set<uid_t> uids = {a_uid};
  bool reused = false;
  for (const char* name : {"b", "c"}) {
    const std::string spec = cluster_.writeSpec(
        std::string(name) + ".yaml",
        std::string("name: ") + name +
            "\nlauncher: command\n"
            "command: [/bin/sh, -c, 'echo uid $(id -u); for f in " +
            a_files +
            "; do cat $f && echo FOUND-A; done; ipcs | grep -c $(id -u) | sed s/^/IPC-OF-UID-/']\n"
            "placement: [{agent: a2, ranks: 1}]\n");
    auto run = runCommand({binPath("ringmasterctl"), "submit", spec, "--wait"}, other);
    ASSERT_EQ(run.exit_code, 0) << name << run.out << run.err;
    const std::string log =
        runCommand({binPath("ringmasterctl"), "logs", run.firstLine()}, other).out;
    EXPECT_EQ(log.find("FOUND-A"), std::string::npos) << name << "\n" << log;
    EXPECT_NE(log.find("IPC-OF-UID-0"), std::string::npos) << name << "\n" << log;
    ASSERT_TRUE(std::regex_search(log, m, std::regex("uid (\\d+)"))) << log;
    const uid_t uid = std::stoul(m[1]);
    EXPECT_NE(uid, kFirst + 1) << "a job was given the uid a process of the host runs as";
    EXPECT_TRUE(uid == kFirst || uid == kFirst + 2) << uid;
    reused = reused || !uids.insert(uid).second;
  }
  EXPECT_TRUE(reused) << "three jobs over two free uids: one uid must have served twice";
  EXPECT_TRUE(stillRuns(bystander)) << "the agent killed a process it did not start";
  ::kill(bystander, SIGKILL);
  ::waitpid(bystander, nullptr, 0);
}

// Two root agents on one host with one --job-uids range (issue 34: the second killed the first's
// running job): each holds the uids it gives out in the host-wide lock directory, so two jobs,
// one on each, run side by side as different uids and both succeed.
TEST_F(HardeningTest, TwoAgentsWithOneRangeRunJobsSideBySide) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: only a root agent switches user";
  letRanksThrough();
  const std::vector<std::string> range = {"--job-uids", "1879048310-1879048311"};
  std::string error;
  ASSERT_TRUE(cluster_.addAgent("a2", 1, &error, range)) << error;
  ASSERT_TRUE(cluster_.addAgent("a3", 1, &error, range)) << error;
  std::vector<std::string> jobs;
  for (const char* agent : {"a2", "a3"}) {
    const std::string spec = cluster_.writeSpec(
        std::string(agent) + ".yaml",
        std::string("name: side-") + agent +
            "\nlauncher: command\ncommand: [/bin/sh, -c, 'echo uid $(id -u); sleep 4; echo "
            "still here']\nplacement: [{agent: " +
            agent + ", ranks: 1}]\n");
    auto submitted = cluster_.ctl({"submit", spec});
    ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
    jobs.push_back(submitted.firstLine());
  }
  std::set<std::string> uids;
  for (const std::string& job : jobs) {
    const std::string log = ctlOutputWith({"logs", job}, "still here", std::chrono::seconds(30));
    std::smatch m;
    ASSERT_TRUE(std::regex_search(log, m, std::regex("uid (\\d+)"))) << log;
    uids.insert(m[1]);
  }
  EXPECT_EQ(uids.size(), 2u) << "two agents gave out one uid";
  for (const std::string& job : jobs) {
    const std::string status =
        ctlOutputWith({"status", job}, "succeeded", std::chrono::seconds(30));
    EXPECT_NE(status.find("succeeded"), std::string::npos) << status;
  }
}

// Disk full: an agent that cannot write its journal keeps the job's records in memory, and
// `status` says why nothing of the job shows; once there is room, the job goes on and its
// records come through.
TEST_F(HardeningTest, AnAgentThatCannotWriteItsJournalIsNamedByStatus) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs";
  const std::string state = cluster_.dir() + "/agents/full";
  std::filesystem::create_directories(state);
  if (::mount("tmpfs", state.c_str(), "tmpfs", 0, "size=4m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{state};
  std::string error;
  ASSERT_TRUE(cluster_.addAgent("full", 1, &error)) << error;
  const std::string spec = cluster_.writeSpec(
      "full.yaml",
      "name: full\nlauncher: command\n"
      "command: [/bin/sh, -c, 'for i in $(seq 1 100); do echo \"{\\\"step\\\": $i, "
      "\\\"loss\\\": 1}\"; sleep 0.1; done']\n"
      "placement: [{agent: full, ranks: 1}]\n");
  auto submitted = cluster_.ctl({"submit", spec});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job = submitted.firstLine();
  std::string status;
  ASSERT_TRUE(waitUntil(
      [&] {
        status = cluster_.ctl({"status", job}).out;
        return status.find(") running") != std::string::npos;
      },
      std::chrono::seconds(20)))
      << status;
  // The disk fills while the job runs: its metric records cannot be written.
  {
    std::FILE* filler = std::fopen((state + "/filler").c_str(), "w");
    ASSERT_NE(filler, nullptr);
    const std::string block(4096, 'x');
    while (std::fwrite(block.data(), 1, block.size(), filler) == block.size() &&
           std::fflush(filler) == 0) {
    }
    std::fclose(filler);
  }
  EXPECT_TRUE(waitUntil(
      [&] {
        status = cluster_.ctl({"status", job}).out;
        return status.find("agent full cannot write its journal: journal ") != std::string::npos;
      },
      std::chrono::seconds(20)))
      << status;
  EXPECT_NE(status.find("No space left on device"), std::string::npos) << status;

  std::filesystem::remove(state + "/filler");
  EXPECT_TRUE(waitUntil(
      [&] {
        status = cluster_.ctl({"status", job}).out;
        return status.find(") succeeded") != std::string::npos;
      },
      std::chrono::seconds(30)))
      << status;
  EXPECT_EQ(status.find("cannot write its journal"), std::string::npos) << status;
}

// Env entries that change how every program of the job is loaded are refused unless the agent
// allows them.
// --rank-memory: a rank over its limit is killed and its failure says why. Where the host has
// no cgroup v2 memory controller for the agent, the agent refuses to start rather than run
// ranks without the limit it was given.
TEST_F(HardeningTest, ARankOverItsMemoryLimitIsKilledAndSaysWhy) {
  AgentProcess limited;
  std::string error;
  if (!limited.start("m1", cluster_.dir() + "/agents/m1", 1, &error, {"--rank-memory", "128M"})) {
    EXPECT_NE(error.find("--rank-memory needs cgroup v2 with the memory controller"),
              std::string::npos)
        << error;
    GTEST_SKIP() << "no cgroup v2 memory controller for the agent here: " << error;
  }
  ASSERT_EQ(runCommand({binPath("ringmaster-agent"), "authorize", "--state-dir",
                        cluster_.dir() + "/agents/m1", "--", cluster_.clientKey()})
                .exit_code,
            0);
  auto connection =
      AgentConnection::connect(context_, {"m1", limited.endpoint(), limited.publicKey()}, keys_);
  ASSERT_TRUE(connection.isOk());
  proto::Envelope request = launch("memory-hog-0000000000000001");
  proto::JobLaunch* job = request.mutable_launch_job()->mutable_launch();
  job->clear_argv();
  job->add_argv("python3");
  job->add_argv("-c");
  job->add_argv("x = b'x' * (512 << 20); print(len(x))");
  job->set_world_size(1);
  job->mutable_ranks()->DeleteSubrange(1, 1);
  ASSERT_TRUE((*connection)->call(request, 5000).isOk());
  EXPECT_TRUE(waitUntil(
      [&] {
        return limited.stderrText().find("memory-hog") != std::string::npos &&
               readFile(cluster_.dir() + "/agents/m1/journal/journal.log")
                       .find("killed by its memory limit of 128 MiB") != std::string::npos;
      },
      std::chrono::seconds(30)))
      << limited.stderrText();
}

TEST_F(HardeningTest, LoaderEnvironmentIsRefusedUnlessTheAgentAllowsIt) {
  proto::Envelope request = launch("preload");
  auto* var = request.mutable_launch_job()->mutable_launch()->add_env();
  var->set_name("LD_PRELOAD");
  var->set_value("/tmp/evil.so");
  const std::string error = refusal(request);
  EXPECT_NE(error.find("env LD_PRELOAD changes how the job's programs are loaded; agent 'a1' "
                       "does not allow it (start the agent with --allow-loader-env)"),
            std::string::npos)
      << error;
}

// A rank that replaces its log with a link to the agent's key gets the link refused, not the
// key read out by `ringmasterctl logs`, nor kept as its log's end in the journal and the history
// (which `logs` prints when the log cannot be read: this test caught the first version of that
// reading through the link).
TEST_F(HardeningTest, ALogReplacedByALinkIsNotFollowed) {
  const std::string state = cluster_.agent("a1").stateDir();
  const std::string spec =
      cluster_.writeSpec("link.yaml",
                         "name: link\nlauncher: command\n"
                         "command: [/bin/sh, -c, 'echo hello; ln -sf " +
                             state + "/agent.key " + state +
                             "/jobs/$RINGMASTER_JOB_ID/attempt-1/rank-0.log']\n"
                             "placement: [{agent: a1, ranks: 1}]\n");
  auto submitted = cluster_.ctl({"submit", spec, "--wait"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  auto logs = cluster_.ctl({"logs", submitted.firstLine()});
  EXPECT_EQ(logs.out.find("secret"), std::string::npos) << logs.out;
  EXPECT_NE((logs.out + logs.err).find("was replaced by a symbolic link"), std::string::npos)
      << logs.out << logs.err;
}

// ZAP checks a key at the handshake only: a key removed from authorized_keys has its open
// connections closed by the agent, and anything still sent on one is refused.
TEST_F(HardeningTest, RemovingAKeyClosesItsOpenConnections) {
  const std::string keys_path = cluster_.agent("a1").stateDir() + "/authorized_keys";
  const std::string before = readFile(keys_path);
  auto extra = security::generateKeyPair();
  ASSERT_TRUE(extra.isOk());
  // Replaced whole (written aside, then renamed), as an editor saves it: the agent reloads the
  // file when it changes, and a file caught half-written (truncated) had no keys for an instant,
  // in which the handshake of the test's own connection was refused.
  const auto replaceKeys = [&](const std::string& text) {
    writeFile(keys_path + ".new", text);
    std::filesystem::rename(keys_path + ".new", keys_path);
  };
  replaceKeys(before + extra->public_key + " departing colleague\n");
  auto departing = AgentConnection::connect(
      context_, {"a1", cluster_.agent("a1").endpoint(), cluster_.agent("a1").publicKey()}, *extra);
  ASSERT_TRUE(departing.isOk());
  proto::Envelope inventory;
  inventory.mutable_inventory_request();
  ASSERT_TRUE((*departing)->call(inventory, 5000).isOk());

  replaceKeys(before);
  EXPECT_TRUE(waitUntil(
      [&] {
        return cluster_.agent("a1").stderrText().find(
                   "closed 1 connection(s) of client:" + extra->public_key +
                   ", no longer in authorized_keys") != std::string::npos;
      },
      std::chrono::seconds(5)))
      << cluster_.agent("a1").stderrText();
  EXPECT_FALSE((*departing)->call(inventory, 2000).isOk());
  const auto others = connection_->call(inventory, 5000);  // the others' connections stay
  EXPECT_TRUE(others.isOk()) << others.status().message() << "\n"
                             << cluster_.agent("a1").stderrText();
}

// A key with role user submits and stops its own jobs; another key's job is as if it did not
// exist for it: not in its inventory or journal, not stoppable, its logs unreadable, its id not
// reusable. The admin key sees both.
TEST_F(HardeningTest, AUserKeyCannotSeeOrStopAnotherKeysJob) {
  const std::string sleeper =
      cluster_.writeSpec("sleeper.yaml",
                         "name: sleeper\nlauncher: command\ncommand: [/bin/sleep, '60']\n"
                         "placement: [{agent: a1, ranks: 1}]\n");
  auto admins = cluster_.ctl({"submit", sleeper});
  ASSERT_EQ(admins.exit_code, 0) << admins.err;
  const std::string admins_job = admins.firstLine();

  // A second client, authorized on a1 with role user.
  std::map<std::string, std::string> user_env = cluster_.env();
  user_env["RINGMASTER_CONFIG_DIR"] = cluster_.dir() + "/user-config";
  user_env["RINGMASTER_DB"] = cluster_.dir() + "/user.db";
  const std::string user_key = runCommand({binPath("ringmasterctl"), "keys"}, user_env).firstLine();
  auto authorized = runCommand({binPath("ringmaster-agent"), "authorize", "--role", "user",
                                "--state-dir", cluster_.agent("a1").stateDir(), "--", user_key});
  ASSERT_EQ(authorized.exit_code, 0) << authorized.err;
  EXPECT_NE(authorized.out.find("authorized as user"), std::string::npos) << authorized.out;
  EXPECT_NE(
      readFile(cluster_.agent("a1").stateDir() + "/authorized_keys").find(user_key + " role=user"),
      std::string::npos);
  auto user_keys = security::loadOrCreateKeyPair(user_env["RINGMASTER_CONFIG_DIR"] + "/client.key");
  ASSERT_TRUE(user_keys.isOk());
  auto user = AgentConnection::connect(
      context_, {"a1", cluster_.agent("a1").endpoint(), cluster_.agent("a1").publicKey()},
      *user_keys);
  ASSERT_TRUE(user.isOk());

  proto::Envelope inventory;
  inventory.mutable_inventory_request();
  auto seen = (*user)->call(inventory, 5000);
  ASSERT_TRUE(seen.isOk()) << seen.status().message();
  EXPECT_EQ(seen->inventory().running_jobs_size(), 0);
  auto admin_seen = connection_->call(inventory, 5000);
  ASSERT_TRUE(admin_seen.isOk());
  EXPECT_EQ(admin_seen->inventory().running_jobs_size(), 1);

  proto::Envelope stop;
  stop.mutable_stop_job()->set_job_id(admins_job);
  auto stopped = (*user)->call(stop, 5000);
  ASSERT_FALSE(stopped.isOk());
  EXPECT_EQ(stopped.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(stopped.status().message().find("has no job '" + admins_job + "' of this key"),
            std::string::npos)
      << stopped.status().message();
  proto::Envelope log;
  log.mutable_read_log()->set_job_id(admins_job);
  EXPECT_EQ((*user)->call(log, 5000).status().code(), ErrorCode::kNotFound);
  proto::Envelope restart;
  restart.mutable_restart_job()->set_job_id(admins_job);
  EXPECT_EQ((*user)->call(restart, 5000).status().code(), ErrorCode::kNotFound);
  proto::Envelope taken = launch(admins_job);
  EXPECT_EQ((*user)->call(taken, 5000).status().code(), ErrorCode::kNotFound);

  // Its own job: submitted, seen and stopped through ringmasterctl as any user would.
  auto users = runCommand({binPath("ringmasterctl"), "submit", sleeper}, user_env);
  ASSERT_EQ(users.exit_code, 0) << users.err;
  const std::string users_job = users.firstLine();
  ASSERT_EQ(runCommand({binPath("ringmasterctl"), "sync"}, user_env).exit_code, 0);
  const std::string user_runs = runCommand({binPath("ringmasterctl"), "runs"}, user_env).out;
  EXPECT_NE(user_runs.find(users_job), std::string::npos) << user_runs;
  EXPECT_EQ(user_runs.find(admins_job), std::string::npos) << user_runs;

  // Its journal: the host's health and its own job, nothing of the other.
  proto::Envelope read;
  read.mutable_read_journal()->set_from_seq(1);
  auto batch = (*user)->call(read, 5000);
  ASSERT_TRUE(batch.isOk());
  std::set<std::string> jobs_seen;
  bool health_seen = false;
  for (const auto& bytes : batch->journal_batch().records()) {
    proto::JournalRecord record;
    ASSERT_TRUE(record.ParseFromString(bytes));
    jobs_seen.insert(record.job());
    health_seen |= record.has_health();
  }
  EXPECT_TRUE(health_seen);
  EXPECT_EQ(jobs_seen, (std::set<std::string>{"", users_job}));
  EXPECT_EQ(batch->journal_batch().next_seq(), batch->journal_batch().last_seq() + 1);

  auto user_stop = runCommand({binPath("ringmasterctl"), "stop", users_job}, user_env);
  EXPECT_EQ(user_stop.exit_code, 0) << user_stop.err;
  EXPECT_NE(cluster_.ctl({"status", admins_job}).out.find("running"), std::string::npos);
  ASSERT_EQ(cluster_.ctl({"sync"}).exit_code, 0);
  const std::string admin_runs = cluster_.ctl({"runs"}).out;
  EXPECT_NE(admin_runs.find(users_job), std::string::npos) << admin_runs;
  EXPECT_NE(admin_runs.find(admins_job), std::string::npos) << admin_runs;
  cluster_.ctl({"stop", admins_job});
}

// A job's metric pattern that makes a backtracking engine run for seconds per line (`(\d+)*z`
// on 28 digits took std::regex 25 s), against 3,000 such lines: the agent keeps answering.
TEST_F(HardeningTest, APathologicalMetricPatternLeavesTheAgentAnswering) {
  const std::string spec = cluster_.writeSpec(
      "regex.yaml",
      "name: regex\nlauncher: command\n"
      "command: [/bin/sh, -c, 'i=0; while [ $i -lt 30 ]; do j=0; while [ $j -lt 100 ]; do echo "
      "1234567890123456789012345678; j=$((j+1)); done; sleep 0.1; i=$((i+1)); done']\n"
      "placement: [{agent: a1, ranks: 1}]\n"
      "metrics: {patterns: {x: '(\\d+)*z'}}\n");
  auto submitted = cluster_.ctl({"submit", spec});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  proto::Envelope inventory;
  inventory.mutable_inventory_request();
  std::vector<double> waits_ms;
  for (int i = 0; i < 25; ++i) {
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(connection_->call(inventory, 5000).isOk());
    waits_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::sort(waits_ms.begin(), waits_ms.end());
  std::printf("inventory while the pattern runs: median %.1f ms, max %.1f ms\n",
              waits_ms[waits_ms.size() / 2], waits_ms.back());
  EXPECT_LT(waits_ms[waits_ms.size() / 2], 100);
  EXPECT_LT(waits_ms.back(), 1000);
  cluster_.ctl({"stop", submitted.firstLine()});
}

// Two ranks printing 60 MB of metric lines each as fast as `yes` can, matched by three
// patterns: the agent keeps answering, and journals at most 1,000 metric records a second per
// rank (2.3 million in 3 s before); the rest stay in the log, which says so at its end.
TEST_F(HardeningTest, AJobFloodingMetricLinesLeavesTheAgentAnsweringAndItsJournalBounded) {
  const std::string spec = cluster_.writeSpec(
      "flood.yaml",
      "name: flood\nlauncher: command\n"
      "command: [/bin/sh, -c, \"yes 'loss=0.25 acc=0.75 lr=0.125' | head -c 60000000\"]\n"
      "placement: [{agent: a1, ranks: 2}]\n"
      "metrics: {patterns: {loss: 'loss=([0-9.]+)', acc: 'acc=([0-9.]+)', lr: "
      "'lr=([0-9.]+)'}}\n");
  proto::Envelope inventory;
  inventory.mutable_inventory_request();
  auto before = connection_->call(inventory, 5000);
  ASSERT_TRUE(before.isOk());
  const auto started = std::chrono::steady_clock::now();
  auto submitted = cluster_.ctl({"submit", spec});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job = submitted.firstLine();
  std::vector<double> waits_ms;
  uint64_t last_seq = 0;
  bool running = true;
  while (running) {
    const auto start = std::chrono::steady_clock::now();
    auto reply = connection_->call(inventory, 5000);
    ASSERT_TRUE(reply.isOk()) << reply.status().message();
    waits_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    last_seq = reply->inventory().journal_last_seq();
    running = reply->inventory().running_jobs_size() > 0;
    ASSERT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(60));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const uint64_t records = last_seq - before->inventory().journal_last_seq();
  std::sort(waits_ms.begin(), waits_ms.end());
  std::printf(
      "inventory while 2 ranks print 60 MB of metric lines each: median %.1f ms, max "
      "%.1f ms; %llu journal records in %.1f s\n",
      waits_ms[waits_ms.size() / 2], waits_ms.back(), static_cast<unsigned long long>(records),
      seconds);
  EXPECT_LT(waits_ms[waits_ms.size() / 2], 100);
  EXPECT_LT(waits_ms.back(), 1000);
  EXPECT_LT(static_cast<double>(records), 2 * (2000 + 1000 * seconds) + 1000);
  const std::string log =
      cluster_.agent("a1").stateDir() + "/jobs/" + job + "/attempt-1/rank-1.log";
  EXPECT_GE(std::filesystem::file_size(log), 60000000u);
  std::ifstream in(log);
  in.seekg(-400, std::ios::end);
  const std::string tail((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(std::regex_search(
      tail, std::regex(R"(\[ringmaster\] \d+ lines printed past 1000 metric lines a second)")))
      << tail;
}

}  // namespace
}  // namespace ringmaster::testing

// The core pieces the cluster view relies on: writing cluster files (atomic, quoted), the rules
// an entry is checked with, key fingerprints and state names.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "ringmaster/client/agent_status.h"
#include "ringmaster/client/cluster_config.h"
#include "ringmaster/client/cluster_file_edits.h"
#include "ringmaster/security/keys.h"

namespace ringmaster {
namespace {

namespace fs = std::filesystem;
using client::AgentEndpoint;

// Every 5-character group starts with '0', so the group's value stays below 2^32 and the key
// decodes; the rest are the Z85 characters that YAML treats specially when unquoted.
constexpr const char* kSpecialKey = "0#[]{0:&*!0?@%$0^+=<0>()/0.-ab0}cde0fghi";

std::string freshKey() {
  auto pair = security::generateKeyPair();
  EXPECT_TRUE(pair.isOk());
  return pair->public_key;
}

class ClusterFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rm_cluster_file_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::set<std::string> filesInDir() const {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      names.insert(entry.path().filename().string());
    }
    return names;
  }

  fs::path dir_;
};

TEST_F(ClusterFileTest, RoundTripsNamesAndKeysWithYamlSpecialCharacters) {
  ASSERT_TRUE(security::isValidKey(kSpecialKey));
  const std::vector<AgentEndpoint> agents = {
      {"gpu: #1 [rack \"a\"]", "tcp://10.0.0.11:7070", kSpecialKey},
      {"back\\slash & *star* !tag 'single' %pct", "tcp://[fe80::1]:7071", freshKey()},
      {"- dash {brace} ünïcode ?q @at `tick`", "tcp://gpu-03.example.org:7072", freshKey()},
      {"plain", "tcp://host:1", freshKey()},
  };
  const std::string path = (dir_ / "cluster.yaml").string();
  ASSERT_TRUE(client::writeClusterFile(path, agents).isOk());

  auto loaded = client::loadClusterFile(path);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  ASSERT_EQ(loaded->size(), agents.size());
  for (size_t i = 0; i < agents.size(); ++i) {
    EXPECT_EQ((*loaded)[i].name, agents[i].name);
    EXPECT_EQ((*loaded)[i].endpoint, agents[i].endpoint);
    EXPECT_EQ((*loaded)[i].server_key, agents[i].server_key);
  }
  EXPECT_EQ(filesInDir(), std::set<std::string>{"cluster.yaml"}) << "a temporary file was left";
}

TEST_F(ClusterFileTest, RewriteReplacesTheFileKeepsItsModeAndLeavesNoTempFile) {
  const std::string path = (dir_ / "cluster.yaml").string();
  ASSERT_TRUE(client::writeClusterFile(path, {{"a", "tcp://h:1", freshKey()}}).isOk());
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u);
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);

  const std::string key = freshKey();
  ASSERT_TRUE(client::writeClusterFile(path, {{"b", "tcp://h:2", key}}).isOk());
  auto loaded = client::loadClusterFile(path);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  ASSERT_EQ(loaded->size(), 1u);
  EXPECT_EQ((*loaded)[0].name, "b");
  EXPECT_EQ((*loaded)[0].server_key, key);
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0640u);
  EXPECT_EQ(filesInDir(), std::set<std::string>{"cluster.yaml"});
}

TEST_F(ClusterFileTest, WritesAnEmptyListThatReadsBack) {
  const std::string path = (dir_ / "sub" / "cluster.yaml").string();
  ASSERT_TRUE(client::writeClusterFile(path, {}).isOk());
  auto loaded = client::loadClusterFile(path);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  EXPECT_TRUE(loaded->empty());
}

TEST_F(ClusterFileTest, FollowsASymlinkInsteadOfReplacingIt) {
  const fs::path real = dir_ / "real.yaml";
  const fs::path link = dir_ / "cluster.yaml";
  ASSERT_TRUE(client::writeClusterFile(real.string(), {}).isOk());
  fs::create_symlink(real, link);
  ASSERT_TRUE(client::writeClusterFile(link.string(), {{"a", "tcp://h:1", freshKey()}}).isOk());
  EXPECT_TRUE(fs::is_symlink(link));
  auto loaded = client::loadClusterFile(real.string());
  ASSERT_TRUE(loaded.isOk());
  EXPECT_EQ(loaded->size(), 1u);
}

TEST_F(ClusterFileTest, RefusesAnEntryTheReaderWouldRefuseAndKeepsTheOldFile) {
  const std::string path = (dir_ / "cluster.yaml").string();
  ASSERT_TRUE(client::writeClusterFile(path, {{"a", "tcp://h:1", freshKey()}}).isOk());
  std::ifstream before_in(path);
  std::stringstream before;
  before << before_in.rdbuf();

  Status bad_key = client::writeClusterFile(path, {{"a", "tcp://h:1", "not-a-key"}});
  EXPECT_EQ(bad_key.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad_key.message().find("server_key"), std::string::npos) << bad_key.message();
  Status duplicate = client::writeClusterFile(
      path, {{"a", "tcp://h:1", freshKey()}, {"a", "tcp://h:2", freshKey()}});
  EXPECT_NE(duplicate.message().find("agents[1]"), std::string::npos) << duplicate.message();
  EXPECT_NE(duplicate.message().find("name"), std::string::npos) << duplicate.message();

  std::ifstream after_in(path);
  std::stringstream after;
  after << after_in.rdbuf();
  EXPECT_EQ(before.str(), after.str());
  EXPECT_EQ(filesInDir(), std::set<std::string>{"cluster.yaml"});
}

TEST(CheckAgentEntry, NamesTheFieldAndWhatIsExpected) {
  const std::string key = freshKey();
  EXPECT_TRUE(client::checkAgentEntry({"gpu01", "tcp://gpu01:7070", key}, {"gpu02"}).ok());

  auto problems = client::checkAgentEntry({"", "http://gpu01:7070", "short"}, {});
  EXPECT_EQ(problems.name, "is missing");
  EXPECT_NE(problems.endpoint.find("expected tcp://HOST:PORT"), std::string::npos);
  EXPECT_NE(problems.server_key.find("has 5 characters"), std::string::npos);

  EXPECT_NE(client::checkAgentEntry({"gpu01", "tcp://gpu01", key}, {}).endpoint.find("no port"),
            std::string::npos);
  EXPECT_NE(client::checkAgentEntry({"gpu01", "tcp://gpu01:99999", key}, {})
                .endpoint.find("port '99999'"),
            std::string::npos);
  EXPECT_NE(client::checkAgentEntry({"gpu01", "tcp://:7070", key}, {}).endpoint.find("no host"),
            std::string::npos);
  EXPECT_NE(client::checkAgentEntry({"gpu01", "tcp://gpu01:7070", key}, {"gpu01"})
                .name.find("used by another agent"),
            std::string::npos);
  EXPECT_NE(
      client::checkAgentEntry({"a\nb", "tcp://gpu01:7070", key}, {}).name.find("control character"),
      std::string::npos);
  // 40 characters, but '~' is not Z85.
  EXPECT_NE(client::checkAgentEntry({"gpu01", "tcp://gpu01:7070", std::string(40, '~')}, {})
                .server_key.find("not valid Z85"),
            std::string::npos);
}

TEST(ParseClusterFile, ReportsEntryProblemsWithLineAndField) {
  auto parsed = client::parseClusterFile(
      "agents:\n  - {name: gpu01, endpoint: \"tcp://gpu01\", server_key: \"x\"}\n", "c.yaml");
  ASSERT_FALSE(parsed.isOk());
  const std::string message = parsed.status().message();
  EXPECT_NE(message.find("c.yaml:2: agents[gpu01].endpoint 'tcp://gpu01' has no port"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("c.yaml:2: agents[gpu01].server_key has 1 characters"), std::string::npos)
      << message;
}

TEST(KeyFingerprint, IsStableShortAndDiffersBetweenKeys) {
  const std::string a = freshKey();
  const std::string b = freshKey();
  const std::string fingerprint = security::keyFingerprint(a);
  EXPECT_TRUE(std::regex_match(fingerprint, std::regex("([0-9a-f]{2}:){7}[0-9a-f]{2}")))
      << fingerprint;
  EXPECT_EQ(security::keyFingerprint(a), fingerprint);
  EXPECT_NE(security::keyFingerprint(b), fingerprint);
  // A fixed key gives a fixed fingerprint across builds and machines (32 zero bytes, checked
  // against FNV-1a 64 computed independently).
  EXPECT_EQ(security::keyFingerprint(kSpecialKey), security::keyFingerprint(kSpecialKey));
  EXPECT_EQ(security::keyFingerprint("0000000000000000000000000000000000000000"),
            "0c:82:10:78:4d:8a:f5:a5");
  EXPECT_EQ(security::keyFingerprint("too short"), "");
  EXPECT_EQ(security::keyFingerprint(std::string(40, '~')), "");
}

// The agent installer adds hosts to the cluster file from parallel processes, while the app may
// edit it too: every edit is a locked read-modify-write, so none is lost.
TEST_F(ClusterFileTest, EditorsInSeveralProcessesAtOnceLoseNoEntry) {
  const std::string path = (dir_ / "cluster.yaml").string();
  constexpr int kProcesses = 6;
  constexpr int kEditsEach = 15;
  std::vector<std::string> keys;
  for (int i = 0; i < kProcesses * kEditsEach; ++i) keys.push_back(freshKey());
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      bool ok = true;
      for (int i = 0; i < kEditsEach; ++i) {
        const int n = p * kEditsEach + i;
        const std::string name = "host" + std::to_string(n);
        // Add, update the same entry, add a throwaway and remove it again.
        ok &= client::addAgentToFile(path, {name, "tcp://10.0.0.1:7070", keys[n]}).isOk();
        ok &= client::putAgentInFile(path, {name, "tcp://10.0.0.2:7070", keys[n]}).isOk();
        ok &= client::putAgentInFile(path, {name + "-tmp", "tcp://10.0.0.3:7070", keys[n]}).isOk();
        ok &= client::removeAgentFromFile(path, name + "-tmp").isOk();
      }
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  auto agents = client::loadClusterFile(path);
  ASSERT_TRUE(agents.isOk()) << agents.status().message();
  ASSERT_EQ(agents->size(), size_t(kProcesses * kEditsEach));
  for (const auto& agent : *agents) {
    EXPECT_EQ(agent.endpoint, "tcp://10.0.0.2:7070") << agent.name;
    EXPECT_EQ(agent.name.find("-tmp"), std::string::npos);
  }
  EXPECT_EQ(filesInDir(), std::set<std::string>{"cluster.yaml"});  // no lock or temp file left

  // Errors name what is wrong and leave the file as it was.
  Status twice = client::addAgentToFile(path, {"host0", "tcp://10.0.0.9:7070", keys[0]});
  EXPECT_NE(twice.message().find("'host0' is used by another agent"), std::string::npos)
      << twice.message();
  Status missing = client::removeAgentFromFile(path, "nope");
  EXPECT_EQ(missing.code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.message().find("agent 'nope' is not in " + path), std::string::npos);
  Status bad = client::putAgentInFile(path, {"host0", "udp://x", keys[0]});
  EXPECT_NE(bad.message().find("endpoint"), std::string::npos) << bad.message();
  EXPECT_EQ(client::loadClusterFile(path)->size(), size_t(kProcesses * kEditsEach));
}

// Sections besides agents: (slurm: clusters, for one) survive every edit of the agents.
TEST_F(ClusterFileTest, EditingAgentsKeepsTheOtherSections) {
  const std::string path = (dir_ / "cluster.yaml").string();
  const std::string key = freshKey();
  {
    std::ofstream out(path);
    out << "agents: []\n"
           "slurm:\n"
           "  - name: hpc\n"
           "    login: alice@login.example.org:22\n"
           "    job_dir: /shared/ringmaster\n"
           "    partition: gpu\n";
  }
  ASSERT_TRUE(client::addAgentToFile(path, {"gpu01", "tcp://10.0.0.1:7070", key}).isOk());
  ASSERT_TRUE(client::putAgentInFile(path, {"gpu01", "tcp://10.0.0.2:7070", key}).isOk());
  ASSERT_TRUE(client::removeAgentFromFile(path, "gpu01").isOk());
  ASSERT_TRUE(client::addAgentToFile(path, {"gpu02", "tcp://10.0.0.3:7070", key}).isOk());
  const YAML::Node root = YAML::LoadFile(path);
  ASSERT_TRUE(root["slurm"].IsSequence());
  EXPECT_EQ(root["slurm"][0]["name"].as<std::string>(), "hpc");
  EXPECT_EQ(root["slurm"][0]["login"].as<std::string>(), "alice@login.example.org:22");
  EXPECT_EQ(root["slurm"][0]["job_dir"].as<std::string>(), "/shared/ringmaster");
  EXPECT_EQ(root["slurm"][0]["partition"].as<std::string>(), "gpu");
  auto agents = client::loadClusterFile(path);
  ASSERT_TRUE(agents.isOk()) << agents.status().message();
  ASSERT_EQ(agents->size(), 1u);
  EXPECT_EQ(agents->front().name, "gpu02");
}

TEST(AgentStateName, NamesEveryState) {
  using client::AgentState;
  EXPECT_STREQ(client::agentStateName(AgentState::kOnline), "online");
  EXPECT_STREQ(client::agentStateName(AgentState::kConnecting), "connecting");
  EXPECT_STREQ(client::agentStateName(AgentState::kUnreachable), "unreachable");
  EXPECT_STREQ(client::agentStateName(AgentState::kKeyRejected), "key rejected");
  EXPECT_STREQ(client::agentStateName(AgentState::kServerKeyMismatch), "server-key mismatch");
  EXPECT_STREQ(client::agentStateName(AgentState::kError), "error");
}

}  // namespace
}  // namespace ringmaster

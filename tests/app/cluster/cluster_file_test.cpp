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

// --- slurm: entries ---

constexpr const char* kFullSlurmEntry = R"(agents: []
slurm:
  - name: hpc
    login: alice@login.example.org:22
    job_dir: /shared/ringmaster
    agent: /shared/ringmaster/bin/ringmaster-agent
    bind: 10.1.0.0
    partition: gpu
    account: proj
    qos: normal
    time: "4:00:00"
    constraint: a100
    nodes: 2
    ranks_per_node: 4
    gpus_per_node: 4
    sbatch_args: [--exclusive]
  - {name: small, job_dir: /scratch/rm}
)";

// The one error of parsing `text`'s slurm: entries, or a note that there was none or several.
std::string slurmError(const std::string& text) {
  auto parsed = client::parseSlurmClusters(text, "c.yaml");
  if (parsed.isOk()) return "(parsed)";
  EXPECT_EQ(parsed.status().code(), ErrorCode::kInvalidArgument);
  const std::string message = parsed.status().message();
  if (message.find('\n') != std::string::npos) return "(several errors)\n" + message;
  return message;
}

// A file with one slurm: entry whose fields after the name are `fields` (4-space indented).
std::string slurmEntry(const std::string& fields) { return "slurm:\n  - name: hpc\n" + fields; }

TEST(ParseSlurmClusters, ReadsAFullEntryAndItsJobDefaults) {
  auto parsed = client::parseSlurmClusters(kFullSlurmEntry, "c.yaml");
  ASSERT_TRUE(parsed.isOk()) << parsed.status().message();
  ASSERT_EQ(parsed->size(), 2u);
  const client::SlurmCluster& hpc = (*parsed)[0];
  EXPECT_EQ(hpc.name, "hpc");
  EXPECT_EQ(hpc.login, "alice@login.example.org:22");
  EXPECT_EQ(hpc.job_dir, "/shared/ringmaster");
  EXPECT_EQ(hpc.agent, "/shared/ringmaster/bin/ringmaster-agent");
  EXPECT_EQ(hpc.bind, "10.1.0.0");
  EXPECT_EQ(hpc.line, 3);
  EXPECT_EQ(hpc.defaults.line, 3);
  EXPECT_EQ(hpc.defaults.partition, "gpu");
  EXPECT_EQ(hpc.defaults.account, "proj");
  EXPECT_EQ(hpc.defaults.qos, "normal");
  EXPECT_EQ(hpc.defaults.time, "4:00:00");
  EXPECT_EQ(hpc.defaults.constraint, "a100");
  EXPECT_EQ(hpc.defaults.nodes, 2);
  EXPECT_EQ(hpc.defaults.ranks_per_node, 4);
  EXPECT_EQ(hpc.defaults.gpus_per_node, 4);
  EXPECT_EQ(hpc.defaults.sbatch_args, std::vector<std::string>{"--exclusive"});
  EXPECT_EQ(hpc.defaults.cluster, "");

  const client::SlurmCluster& small = (*parsed)[1];
  EXPECT_EQ(small.name, "small");
  EXPECT_EQ(small.job_dir, "/scratch/rm");
  EXPECT_EQ(small.login, "");
  EXPECT_EQ(small.agent, "");
  EXPECT_EQ(small.bind, "");
  EXPECT_EQ(small.line, 17);
  EXPECT_EQ(small.defaults.nodes, 0);
  EXPECT_EQ(small.defaults.partition, "");
}

TEST(ParseSlurmClusters, NoSlurmSectionIsAnEmptyList) {
  for (const char* text : {"", "agents: []\n", "agents: []\nslurm:\n", "slurm: []\n"}) {
    auto parsed = client::parseSlurmClusters(text, "c.yaml");
    ASSERT_TRUE(parsed.isOk()) << text << ": " << parsed.status().message();
    EXPECT_TRUE(parsed->empty()) << text;
  }
}

TEST(ParseSlurmClusters, AcceptsEveryLoginAndBindForm) {
  for (const char* login : {"login", "alice@login", "login:2222", "alice@10.0.0.1:22",
                            "bob@[fe80::1]:22", "[::1]", "login-01.hpc_site.example.org"}) {
    EXPECT_EQ(
        slurmError(slurmEntry("    job_dir: /j\n    login: \"" + std::string(login) + "\"\n")),
        "(parsed)")
        << login;
  }
  for (const char* bind : {"10.1.0.5", "::", "fe80::1", "ib0.node.example.org"}) {
    EXPECT_EQ(slurmError(slurmEntry("    job_dir: /j\n    bind: \"" + std::string(bind) + "\"\n")),
              "(parsed)")
        << bind;
  }
}

TEST(ParseSlurmClusters, RejectsAMissingEmptyOrDuplicateName) {
  EXPECT_EQ(slurmError("slurm:\n  - job_dir: /j\n"),
            "c.yaml:2: slurm[0].name: is missing: expected the cluster's name, e.g. hpc");
  EXPECT_EQ(slurmError("slurm:\n  - name: \"\"\n    job_dir: /j\n"),
            "c.yaml:2: slurm[0].name: is empty: expected the cluster's name");
  EXPECT_NE(slurmError("slurm:\n  - name: \"a\\nb\"\n    job_dir: /j\n")
                .find("c.yaml:2: slurm[0].name: contains a control character"),
            std::string::npos);
  EXPECT_EQ(slurmError("slurm:\n  - {name: hpc, job_dir: /j}\n  - {name: hpc, job_dir: /k}\n"),
            "c.yaml:3: slurm[hpc].name: 'hpc' is used by another slurm: entry (names must be "
            "unique)");
}

TEST(ParseSlurmClusters, RejectsAMissingOrRelativeJobDir) {
  EXPECT_EQ(slurmError(slurmEntry("    partition: gpu\n")),
            "c.yaml:2: slurm[hpc].job_dir: is missing: expected an absolute path that the login "
            "node and every compute node see, e.g. /shared/ringmaster");
  EXPECT_EQ(slurmError(slurmEntry("    job_dir: shared/rm\n")),
            "c.yaml:3: slurm[hpc].job_dir: 'shared/rm' is not absolute: expected a path starting "
            "with '/'");
  EXPECT_NE(slurmError(slurmEntry("    job_dir: \"/j\\nrm -rf /\"\n")).find("control character"),
            std::string::npos);
  EXPECT_NE(slurmError(slurmEntry("    job_dir: [/j]\n"))
                .find("c.yaml:3: slurm[hpc].job_dir: expected a string, got a list"),
            std::string::npos);
}

TEST(ParseSlurmClusters, RejectsABadLogin) {
  auto loginError = [](const std::string& login) {
    return slurmError(slurmEntry("    job_dir: /j\n    login: \"" + login + "\"\n"));
  };
  EXPECT_NE(loginError("alice@login:0")
                .find("c.yaml:4: slurm[hpc].login: 'alice@login:0': port "
                      "'0' is not a number from 1 to 65535"),
            std::string::npos);
  EXPECT_NE(loginError("login:65536").find("port '65536'"), std::string::npos);
  EXPECT_NE(loginError("login:ssh").find("port 'ssh'"), std::string::npos);
  EXPECT_NE(loginError("alice@").find("has no host"), std::string::npos);
  EXPECT_NE(loginError("@login").find("empty user"), std::string::npos);
  EXPECT_NE(loginError("a@b@login").find("two '@'"), std::string::npos);
  EXPECT_NE(loginError("alice@login :22").find("contains a space"), std::string::npos);
  EXPECT_NE(loginError("alice@login\\n").find("control character"), std::string::npos);
  EXPECT_NE(loginError("fe80::1").find("brackets"), std::string::npos);
  EXPECT_NE(loginError("[fe80::1").find("no ']'"), std::string::npos);
  // ssh would take these for options.
  EXPECT_NE(loginError("-oProxyCommand=sh").find("may not start with '-'"), std::string::npos);
  EXPECT_NE(loginError("-oProxyCommand=sh@login").find("may not start with '-'"),
            std::string::npos);
  EXPECT_NE(loginError("").find("is empty"), std::string::npos);
}

TEST(ParseSlurmClusters, RejectsARelativeAgentAndABadBind) {
  EXPECT_EQ(slurmError(slurmEntry("    job_dir: /j\n    agent: bin/ringmaster-agent\n")),
            "c.yaml:4: slurm[hpc].agent: 'bin/ringmaster-agent' is not absolute: expected a path "
            "starting with '/'");
  EXPECT_NE(slurmError(slurmEntry("    job_dir: /j\n    bind: \"10.0.0.1 10.0.0.2\"\n"))
                .find("c.yaml:4: slurm[hpc].bind: '10.0.0.1 10.0.0.2' contains a space"),
            std::string::npos);
  EXPECT_NE(slurmError(slurmEntry("    job_dir: /j\n    bind: \"[::1]\"\n"))
                .find("c.yaml:4: slurm[hpc].bind: '[::1]': expected an IPv4 or IPv6 address"),
            std::string::npos);
  EXPECT_NE(slurmError(slurmEntry("    job_dir: /j\n    bind: \"\"\n")).find("bind: is empty"),
            std::string::npos);
}

TEST(ParseSlurmClusters, RejectsBadJobDefaultsNamingTheField) {
  EXPECT_EQ(slurmError(slurmEntry("    job_dir: /j\n    nodes: 0\n")),
            "c.yaml:4: slurm[hpc].nodes: expected an integer from 1 to 100000, got 0");
  EXPECT_EQ(slurmError(slurmEntry("    job_dir: /j\n    gpus_per_node: \"4\"\n")),
            "c.yaml:4: slurm[hpc].gpus_per_node: expected an integer from 0 to 1024, got the "
            "quoted string '4' (hint: remove the quotes)");
  EXPECT_NE(slurmError(slurmEntry("    job_dir: /j\n    partition: \"gpu\\nreboot\"\n"))
                .find("c.yaml:4: slurm[hpc].partition: 'gpu\\nreboot' contains a line break"),
            std::string::npos);
  EXPECT_NE(slurmError(slurmEntry("    job_dir: /j\n    time: 4h\n"))
                .find("c.yaml:4: slurm[hpc].time: expected a Slurm time limit, got '4h'"),
            std::string::npos);
  EXPECT_NE(slurmError(slurmEntry("    job_dir: /j\n    sbatch_args: [--a, b]\n"))
                .find("c.yaml:4: slurm[hpc].sbatch_args[1]: expected an sbatch option starting "
                      "with '-', got 'b'"),
            std::string::npos);
}

TEST(ParseSlurmClusters, RejectsAnUnknownKeyWithAHint) {
  EXPECT_EQ(slurmError(slurmEntry("    job_dir: /j\n    partiton: gpu\n")),
            "c.yaml:4: slurm[hpc].partiton: unknown key 'partiton' (hint: did you mean "
            "'partition'?)");
  // A misspelt required key: it is missing, and the unknown key says what was meant.
  const std::string misspelt = slurmError(slurmEntry("    jobdir: /j\n"));
  EXPECT_NE(misspelt.find("c.yaml:2: slurm[hpc].job_dir: is missing"), std::string::npos)
      << misspelt;
  EXPECT_NE(misspelt.find("c.yaml:3: slurm[hpc].jobdir: unknown key 'jobdir' (hint: did you mean "
                          "'job_dir'?)"),
            std::string::npos)
      << misspelt;
  EXPECT_NE(slurmError(slurmEntry("    job_dir: /j\n    job_dir: /k\n"))
                .find("c.yaml:4: slurm[hpc].job_dir: duplicate key (first given on line 3)"),
            std::string::npos);
}

TEST(ParseSlurmClusters, RejectsASlurmSectionOfTheWrongShape) {
  EXPECT_EQ(slurmError("slurm:\n  name: hpc\n"),
            "c.yaml:2: slurm: expected a list of {name, job_dir, ...} entries, got a mapping");
  EXPECT_EQ(slurmError("slurm:\n  - hpc\n"),
            "c.yaml:2: slurm[0]: expected a mapping {name, job_dir, ...}, got 'hpc'");
  EXPECT_EQ(slurmError("- slurm\n"), "c.yaml: expected a mapping with 'agents:' and/or 'slurm:'");
  EXPECT_NE(slurmError("slurm: [\n").find("c.yaml:"), std::string::npos);
}

TEST(ParseSlurmClusters, ReportsEveryErrorOfEveryEntry) {
  const std::string message = slurmError(
      "slurm:\n  - {name: a, job_dir: rel}\n  - name: b\n    job_dir: /j\n    nodes: -1\n"
      "    login: \"x:0\"\n");
  EXPECT_NE(message.find("c.yaml:2: slurm[a].job_dir"), std::string::npos) << message;
  EXPECT_NE(message.find("c.yaml:5: slurm[b].nodes"), std::string::npos) << message;
  EXPECT_NE(message.find("c.yaml:6: slurm[b].login"), std::string::npos) << message;
}

TEST(ParseClusterFile, ASlurmOnlyFileHasNoAgentsAndOneSlurmCluster) {
  const std::string text = "slurm:\n  - {name: hpc, job_dir: /shared/rm}\n";
  auto agents = client::parseClusterFile(text, "c.yaml");
  ASSERT_TRUE(agents.isOk()) << agents.status().message();
  EXPECT_TRUE(agents->empty());
  auto clusters = client::parseSlurmClusters(text, "c.yaml");
  ASSERT_TRUE(clusters.isOk()) << clusters.status().message();
  ASSERT_EQ(clusters->size(), 1u);
  EXPECT_EQ(clusters->front().name, "hpc");

  // A file with neither is still refused.
  auto neither = client::parseClusterFile("other: 1\n", "c.yaml");
  ASSERT_FALSE(neither.isOk());
  EXPECT_NE(neither.status().message().find("expected a mapping with 'agents:'"),
            std::string::npos);
}

TEST_F(ClusterFileTest, LoadSlurmClustersReadsTheFileAndTakesAMissingOneAsEmpty) {
  auto missing = client::loadSlurmClusters((dir_ / "nope.yaml").string());
  ASSERT_TRUE(missing.isOk()) << missing.status().message();
  EXPECT_TRUE(missing->empty());

  const std::string path = (dir_ / "cluster.yaml").string();
  {
    std::ofstream out(path);
    out << kFullSlurmEntry;
  }
  auto loaded = client::loadSlurmClusters(path);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  EXPECT_EQ(loaded->size(), 2u);

  {
    std::ofstream out(path);
    out << "slurm:\n  - {name: hpc}\n";
  }
  auto bad = client::loadSlurmClusters(path);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find(path + ":2: slurm[hpc].job_dir: is missing"),
            std::string::npos)
      << bad.status().message();

  auto directory = client::loadSlurmClusters(dir_.string());
  EXPECT_FALSE(directory.isOk());
}

// Adding an agent to a file that only lists Slurm clusters keeps them, readable as before.
TEST_F(ClusterFileTest, AddingAnAgentToASlurmOnlyFileKeepsTheSlurmClusters) {
  const std::string path = (dir_ / "cluster.yaml").string();
  {
    std::ofstream out(path);
    out << std::string(kFullSlurmEntry).substr(std::string("agents: []\n").size());
  }
  ASSERT_TRUE(client::addAgentToFile(path, {"gpu01", "tcp://10.0.0.1:7070", freshKey()}).isOk());
  auto agents = client::loadClusterFile(path);
  ASSERT_TRUE(agents.isOk()) << agents.status().message();
  ASSERT_EQ(agents->size(), 1u);
  auto clusters = client::loadSlurmClusters(path);
  ASSERT_TRUE(clusters.isOk()) << clusters.status().message();
  ASSERT_EQ(clusters->size(), 2u);
  EXPECT_EQ((*clusters)[0].login, "alice@login.example.org:22");
  EXPECT_EQ((*clusters)[0].defaults.time, "4:00:00");
  EXPECT_EQ((*clusters)[0].defaults.nodes, 2);
  EXPECT_EQ((*clusters)[0].defaults.sbatch_args, std::vector<std::string>{"--exclusive"});
  EXPECT_EQ((*clusters)[1].job_dir, "/scratch/rm");
}

// An empty file and "agents:" with nothing under it mean "no agents yet": read as such, and
// `cluster add` (and the installer, through it) adds to them.
TEST_F(ClusterFileTest, AnEmptyFileIsAClusterWithNoAgentsYet) {
  for (const std::string text : {"", "agents:\n", "# nothing yet\n"}) {
    SCOPED_TRACE("'" + text + "'");
    auto agents = client::parseClusterFile(text, "c.yaml");
    ASSERT_TRUE(agents.isOk()) << agents.status().message();
    EXPECT_TRUE(agents->empty());
    const std::string path = (dir_ / "empty.yaml").string();
    {
      std::ofstream out(path);
      out << text;
    }
    ASSERT_TRUE(client::addAgentToFile(path, {"gpu01", "tcp://10.0.0.1:7070", freshKey()}).isOk());
    auto loaded = client::loadClusterFile(path);
    ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
    ASSERT_EQ(loaded->size(), 1u);
    EXPECT_EQ(loaded->front().name, "gpu01");
  }
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

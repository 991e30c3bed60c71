// The cluster preflight for real (issue 39): 4 agents in network namespaces routed through this
// one, the path between a1 and a3 alone limited with tc tbf, and a4's state directory on a nearly
// full 64 MiB tmpfs. `ringmasterctl preflight` must name exactly that link and that disk, within
// 30 s on a 2-core machine; each report is kept in the history (`preflight --history`, `--show`),
// and its link tests stay out of `ringmasterctl hardware`. Needs root (namespaces, tc, mount);
// skipped otherwise.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "harness.h"
#include "namespace_network.h"
#include "planted_history.h"

namespace ringmaster::testing {
namespace {

using nlohmann::json;

class PreflightTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why; !network_.create("rmpf", 4, 60, "", &why)) {
      GTEST_SKIP() << "cannot make network namespaces here: " << why;
    }
    // A kernel without htb, u32 or tbf, or a container that may not mount: the same as no netns.
    if (std::string why; !network_.shapePath(0, 2, "100mbit", &why)) {
      GTEST_SKIP() << "cannot shape one path with tc here: " << why;
    }
    tmpfs_ = cluster_.dir() + "/agents/a4";
    std::filesystem::create_directories(tmpfs_);
    if (::mount("tmpfs", tmpfs_.c_str(), "tmpfs", 0, "size=64m,mode=0700") != 0) {
      const std::string why = std::strerror(errno);
      tmpfs_.clear();
      GTEST_SKIP() << "cannot mount a tmpfs here: " << why;
    }
    std::string error;
    for (int i = 0; i < 4; ++i) {
      const std::string name = "a" + std::to_string(i + 1);
      ASSERT_TRUE(cluster_.addAgent(name, 2, &error, {}, network_.host(i))) << error;
    }
    // Nearly full: 2 MiB left to a4's journal and its link tests' logs.
    struct statvfs disk {};
    ASSERT_EQ(::statvfs(tmpfs_.c_str(), &disk), 0);
    const uint64_t free_bytes = static_cast<uint64_t>(disk.f_bavail) * disk.f_frsize;
    std::FILE* filler = std::fopen((tmpfs_ + "/filler").c_str(), "w");
    ASSERT_NE(filler, nullptr);
    ASSERT_EQ(::posix_fallocate(fileno(filler), 0, static_cast<off_t>(free_bytes - (2 << 20))), 0);
    std::fclose(filler);
  }
  void TearDown() override {
    // Lazily: a4's agent still has it open until the cluster stops it.
    if (!tmpfs_.empty()) ::umount2(tmpfs_.c_str(), MNT_DETACH);
  }

  NamespaceNetwork network_;
  Cluster cluster_;
  std::string tmpfs_;
};

TEST_F(PreflightTest, NamesExactlyTheSlowLinkAndTheFullDiskWithin30Seconds) {
  const auto start = std::chrono::steady_clock::now();
  CommandResult result = cluster_.ctl({"preflight", "--json"}, 120000);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("RESULT preflight_4_agents_seconds=%.1f\n", seconds);
  EXPECT_EQ(result.exit_code, 1) << result.err;  // problems were named
  const json out = json::parse(result.out);
  std::vector<std::string> problems = out["problems"].get<std::vector<std::string>>();
  ASSERT_EQ(problems.size(), 2u) << out.dump(2);
  EXPECT_EQ(problems[0].rfind("a4: ", 0), 0u) << problems[0];
  EXPECT_NE(problems[0].find(" free of 64.0 MiB in " + tmpfs_), std::string::npos) << problems[0];
  EXPECT_EQ(problems[1].rfind("link a1 <-> a3: ", 0), 0u) << problems[1];
  EXPECT_NE(problems[1].find("GB/s, the median pair "), std::string::npos) << problems[1];
  EXPECT_LT(seconds, 30) << result.err;

  // Every pair measured once, in rounds; the shaped one far below the rest.
  ASSERT_EQ(out["links"].size(), 6u);
  double slow = 0, slowest_other = 1e9;
  for (const auto& link : out["links"]) {
    EXPECT_EQ(link["error"], "") << link.dump();
    const double gbps = link["gbps"].get<double>();
    EXPECT_GT(gbps, 0);
    const bool shaped = link["a"] == "a1" && link["b"] == "a3";
    if (shaped) slow = gbps;
    if (!shaped) slowest_other = std::min(slowest_other, gbps);
  }
  EXPECT_LT(slow, 0.0125 * 1.2);  // 100 Mbit/s is 0.0125 GB/s
  EXPECT_GT(slowest_other, 4 * slow);
  for (const auto& agent : out["agents"]) {
    EXPECT_EQ(agent["error"], "");
    EXPECT_LT(std::abs(agent["clock_offset_s"].get<double>()), 1.0);  // one machine, one clock
  }

  // The same in words: the tables, then each problem on its own line.
  result = cluster_.ctl({"preflight"}, 120000);
  EXPECT_EQ(result.exit_code, 1);
  std::printf("%s", result.out.c_str());
  EXPECT_NE(result.out.find("problem: link a1 <-> a3: "), std::string::npos) << result.out;
  result = cluster_.ctl({"preflight", "--no-links", "a1", "a2"});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("all clear: 2 agent(s), 0 link(s) checked"), std::string::npos)
      << result.out;
  result = cluster_.ctl({"preflight", "a9"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("unknown agent 'a9'; the cluster file has: a1, a2, a3, a4"),
            std::string::npos)
      << result.err;

  // Each check is kept (the unknown agent's was never run), newest first, and read back whole
  // without asking an agent.
  result = cluster_.ctl({"preflight", "--history"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::printf("%s", result.out.c_str());
  EXPECT_NE(result.out.find("2 problem(s): a4: "), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("all clear"), std::string::npos) << result.out;
  result = cluster_.ctl({"preflight", "--history", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json kept = json::parse(result.out);
  ASSERT_EQ(kept.size(), 3u) << kept.dump(2);
  EXPECT_EQ(kept[0]["links"].size(), 0u);  // --no-links a1 a2
  EXPECT_EQ(kept[2]["id"], out["id"]);
  EXPECT_EQ(kept[2]["problems"], out["problems"]);
  EXPECT_EQ(kept[2]["links"], out["links"]);
  EXPECT_EQ(kept[2]["agents"], out["agents"]);
  result = cluster_.ctl({"preflight", "--show", std::to_string(out["id"].get<int64_t>())});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("problem: link a1 <-> a3: "), std::string::npos) << result.out;
  result = cluster_.ctl({"preflight", "--show", "99"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("no preflight 99 in the history"), std::string::npos) << result.err;

  // The link tests are not training runs: the hardware report leaves them out.
  result = cluster_.ctl({"hardware", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json hardware = json::parse(result.out);
  EXPECT_EQ(hardware["runs"], 0) << hardware.dump(2);
  EXPECT_TRUE(hardware["outliers"].empty()) << hardware.dump(2);
}

// `ringmasterctl hardware` on a history with a planted flaky GPU says what the Hardware view
// says: that GPU named, with its failed runs; the table marks it.
TEST(HardwareCommand, NamesThePlantedGpuWithItsFailedRuns) {
  Cluster cluster;  // no agent: the command reads the history alone
  {
    auto writer = store::Writer::open(cluster.dbPath());
    ASSERT_TRUE(writer.isOk()) << writer.status().message();
    hardware::PlantedCluster planted;
    hardware::plantRuns(planted, true);
    planted.applyTo(**writer);
  }
  CommandResult result = cluster.ctl({"hardware", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json out = json::parse(result.out);
  EXPECT_EQ(out["runs"], 36);
  EXPECT_EQ(out["failed"], 5);
  ASSERT_EQ(out["outliers"].size(), 1u) << out.dump(2);
  EXPECT_EQ(out["outliers"][0]["id"], hardware::uuidOf(2, 1));
  EXPECT_EQ(out["outliers"][0]["text"].get<std::string>().rfind(
                "GPU GPU-213f2c1a\u2026 (GPU 1, NVIDIA H100 80GB HBM3) on gpu02 was in 4 of the 5 "
                "failed runs",
                0),
            0u)
      << out["outliers"][0]["text"];

  result = cluster.ctl({"hardware"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::printf("%s", result.out.c_str());
  EXPECT_NE(result.out.find("<- outlier"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("failed runs on GPU-213f2c1a\u2026: job-"), std::string::npos)
      << result.out;
}

}  // namespace
}  // namespace ringmaster::testing

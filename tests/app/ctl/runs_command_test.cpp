// `ringmasterctl runs` over a real SQLite history: archived runs are left out unless --archived
// asks for them, and then say so; the output without the flag is unchanged; a preflight's link
// tests are left out unless --link-tests, and stderr says so. `agents` of an empty cluster file
// says how to add one.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ctl.h"
#include "ringmaster/store/store.h"

namespace ringmaster::ctl {
namespace {

namespace fs = std::filesystem;

class RunsCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "ringmaster-runs-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    // No cluster file: the command shows the history only, and makes no keys outside dir_.
    ::setenv("RINGMASTER_CONFIG_DIR", (dir_ + "/config").c_str(), 1);
    globals_.cluster_file = dir_ + "/no-cluster.yaml";
    globals_.db_file = dir_ + "/history.db";
    auto store = store::Writer::open(globals_.db_file);
    ASSERT_TRUE(store.isOk()) << store.status().toString();
    for (const char* id : {"shown-run-1", "archived-run-2", "preflight-link-a1-a2"}) {
      ASSERT_TRUE(
          (*store)->recordSubmission({.job_id = id, .name = id, .submitted_at = 100}).isOk());
    }
    ASSERT_TRUE((*store)->setArchived({"archived-run-2"}, true).isOk());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string runs(bool json, bool archived, bool link_tests = false) {
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    const int rc = runRuns(globals_, json, archived, link_tests);
    err_ = ::testing::internal::GetCapturedStderr();  // "showing the history only", ...
    std::string out = ::testing::internal::GetCapturedStdout();
    EXPECT_EQ(rc, kExitOk) << out;
    return out;
  }

  std::string dir_, err_;
  Globals globals_;
};

TEST_F(RunsCommandTest, LeavesArchivedRunsOutAndKeepsItsColumns) {
  const std::string out = runs(false, false);
  EXPECT_NE(out.find("shown-run-1"), std::string::npos) << out;
  EXPECT_EQ(out.find("archived-run-2"), std::string::npos) << out;
  EXPECT_EQ(out.find("ARCHIVED"), std::string::npos) << out;
  const std::string json = runs(true, false);
  EXPECT_EQ(json.find("archived"), std::string::npos) << json;
}

TEST_F(RunsCommandTest, LeavesAPreflightsLinkTestsOutUnlessAskedFor) {
  std::string out = runs(false, false);
  EXPECT_EQ(out.find("preflight-link-a1-a2"), std::string::npos) << out;
  EXPECT_NE(err_.find("1 preflight link test(s) not listed (--link-tests lists them"),
            std::string::npos)
      << err_;
  EXPECT_EQ(runs(true, false).find("preflight-link"), std::string::npos);
  out = runs(false, false, true);
  EXPECT_NE(out.find("preflight-link-a1-a2"), std::string::npos) << out;
  EXPECT_EQ(err_.find("not listed"), std::string::npos) << err_;
}

TEST_F(RunsCommandTest, ListsArchivedRunsMarkedWithTheFlag) {
  const std::string out = runs(false, true);
  EXPECT_NE(out.find("ARCHIVED"), std::string::npos) << out;
  const size_t line = out.find("archived-run-2");
  ASSERT_NE(line, std::string::npos) << out;
  EXPECT_NE(out.substr(line, out.find('\n', line) - line).find("yes"), std::string::npos) << out;
  const std::string json = runs(true, true);
  EXPECT_NE(json.find("\"archived\": true"), std::string::npos) << json;
  EXPECT_NE(json.find("\"archived\": false"), std::string::npos) << json;
}

// An empty cluster file (a first run, an agent removed) is not an empty table and a shrug: the
// command says how to add an agent.
TEST_F(RunsCommandTest, AgentsOfAnEmptyClusterFileSayHowToAddOne) {
  const std::string empty = dir_ + "/empty-cluster.yaml";
  std::ofstream(empty) << "agents: []\n";
  Globals globals = globals_;
  globals.cluster_file = empty;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = runAgents(globals, {}, false);
  const std::string err = ::testing::internal::GetCapturedStderr();
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, kExitOk) << out << err;
  EXPECT_NE(err.find("no agents in " + empty + ": add one with `ringmasterctl cluster add"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace ringmaster::ctl

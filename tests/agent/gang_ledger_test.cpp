// The ledger an agent takes its gangs up again from after a restart: what it saves comes back
// whole, a file it cannot read is named and removed (never a crash, never a wrong job), and a
// write it did not finish is ignored.
#include "gang_ledger.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace ringmaster::agent {
namespace {

class GangLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gang-ledger-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::vector<SavedGang> load() {
    log_.clear();
    return GangLedger(dir_.string()).load([&](const std::string& line) { log_ += line + "\n"; });
  }
  static SavedGang gang(const std::string& job, uint32_t attempt) {
    SavedGang saved;
    saved.launch.set_job_id(job);
    saved.launch.set_attempt(attempt);
    saved.launch.set_rendezvous_secret_key("secret of " + job);
    saved.launch.add_ranks()->set_rank(3);
    saved.first_attempt = 1;
    saved.original_agents = 4;
    saved.uncounted_restarts = 2;
    return saved;
  }
  void write(const std::string& name, const std::string& text) {
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }

  std::filesystem::path dir_;
  std::string log_;
};

TEST_F(GangLedgerTest, WhatIsSavedComesBackWholeInAttemptOrder) {
  GangLedger ledger(dir_.string());
  SavedGang later = gang("job-b", 3);
  later.stopping = true;
  later.stopped_cleanly = true;
  ASSERT_TRUE(ledger.save(later).isOk());
  ASSERT_TRUE(ledger.save(gang("job-a", 2)).isOk());
  struct stat st {};
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u) << "the job key pairs are in it";

  const std::vector<SavedGang> saved = load();
  ASSERT_EQ(saved.size(), 2u) << log_;
  EXPECT_EQ(saved[0].launch.job_id(), "job-a");
  EXPECT_EQ(saved[1].launch.job_id(), "job-b");
  EXPECT_EQ(saved[1].launch.attempt(), 3u);
  EXPECT_EQ(saved[1].launch.rendezvous_secret_key(), "secret of job-b");
  EXPECT_EQ(saved[1].launch.ranks(0).rank(), 3);
  EXPECT_EQ(saved[1].original_agents, 4);
  EXPECT_EQ(saved[1].uncounted_restarts, 2u);
  EXPECT_TRUE(saved[1].stopping);
  EXPECT_TRUE(saved[1].stopped_cleanly);
  EXPECT_FALSE(saved[0].stopping);
  EXPECT_FALSE(saved[0].stopped_cleanly);

  ledger.remove("job-a");
  ASSERT_EQ(load().size(), 1u);
}

TEST_F(GangLedgerTest, AnUnreadableFileIsNamedAndRemovedAndTheRestLoads) {
  ASSERT_TRUE(GangLedger(dir_.string()).save(gang("good", 1)).isOk());
  write("garbage", "not a gang at all");
  write("torn", "ringmaster-gang 1 first_attempt=1\n\x0a\xff\xff");
  write("good.tmp", "a write the agent did not finish");
  SavedGang other = gang("elsewhere", 1);
  std::string bytes;
  other.launch.SerializeToString(&bytes);
  write("renamed", "ringmaster-gang 1 first_attempt=1\n" + bytes);

  const std::vector<SavedGang> saved = load();
  ASSERT_EQ(saved.size(), 1u) << log_;
  EXPECT_EQ(saved[0].launch.job_id(), "good");
  EXPECT_NE(log_.find("garbage: not a saved gang"), std::string::npos) << log_;
  EXPECT_NE(log_.find("torn: its launch does not parse"), std::string::npos) << log_;
  EXPECT_NE(log_.find("renamed: it names another job"), std::string::npos) << log_;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "garbage"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "good.tmp"));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "good"));
}

TEST_F(GangLedgerTest, WithoutADirectoryItKeepsNothing) {
  GangLedger none("");
  EXPECT_TRUE(none.save(gang("job", 1)).isOk());
  EXPECT_TRUE(none.load([](const std::string&) {}).empty());
}

}  // namespace
}  // namespace ringmaster::agent

// The index of a rank log's stderr bytes: ranges written as output arrives, touching ones merged,
// read back clipped to a window; a missing or damaged index reads as no stderr.
#include "stderr_index.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace ringmaster::agent {
namespace {

using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

class StderrIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("stderr-index-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    log_ = (dir_ / "rank-0.log").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  std::string log_;
};

TEST_F(StderrIndexTest, TouchingRangesAreOneAndAWindowReadsThemClipped) {
  StderrIndexWriter index;
  ASSERT_TRUE(index.open(log_));
  index.add(10, 20);
  index.add(20, 25);  // the same stream went on: one range
  index.add(40, 50);
  index.add(50, 50);  // nothing
  index.add(60, 61);
  EXPECT_EQ(std::filesystem::file_size(stderrIndexPath(log_)), 3u * 16);
  EXPECT_EQ(readStderrRanges(log_, 0, 100), (Ranges{{10, 25}, {40, 50}, {60, 61}}));
  EXPECT_EQ(readStderrRanges(log_, 22, 45), (Ranges{{22, 25}, {40, 45}}));
  EXPECT_EQ(readStderrRanges(log_, 25, 40), Ranges{});
  EXPECT_EQ(readStderrRanges(log_, 61, 1000), Ranges{});
  EXPECT_EQ(readStderrRanges(log_, 5, 5), Ranges{});
  // Reopened for the next attempt's log at the same path: emptied.
  ASSERT_TRUE(index.open(log_));
  EXPECT_EQ(readStderrRanges(log_, 0, 100), Ranges{});
}

TEST_F(StderrIndexTest, ManyRangesAreFoundByBinarySearch) {
  StderrIndexWriter index;
  ASSERT_TRUE(index.open(log_));
  for (uint64_t i = 0; i < 10000; ++i) index.add(10 * i, 10 * i + 3);  // 1,000 blocks of reads
  index.close();
  EXPECT_EQ(readStderrRanges(log_, 50001, 50025),
            (Ranges{{50001, 50003}, {50010, 50013}, {50020, 50023}}));
  EXPECT_EQ(readStderrRanges(log_, 0, 100000).size(), 10000u);
}

TEST_F(StderrIndexTest, NoIndexALinkOrATornPairReadAsNoMoreStderr) {
  EXPECT_EQ(readStderrRanges(log_, 0, 100), Ranges{});  // none written: all stdout
  // A rank that owns the directory plants a link: the writer does not follow it.
  const std::string target = (dir_ / "elsewhere").string();
  std::ofstream(target) << "keep";
  std::filesystem::create_symlink(target, stderrIndexPath(log_));
  StderrIndexWriter index;
  EXPECT_FALSE(index.open(log_));
  EXPECT_EQ(readStderrRanges(log_, 0, 100), Ranges{});
  std::ifstream kept(target);
  std::string text;
  kept >> text;
  EXPECT_EQ(text, "keep");
  // A torn last pair (a full disk) is left out.
  std::filesystem::remove(stderrIndexPath(log_));
  ASSERT_TRUE(index.open(log_));
  index.add(1, 2);
  index.close();
  std::ofstream(stderrIndexPath(log_), std::ios::app) << "torn";
  EXPECT_EQ(readStderrRanges(log_, 0, 100), (Ranges{{1, 2}}));
}

}  // namespace
}  // namespace ringmaster::agent

// A native rank's phase file: what the worker writes through its mapping is what the agent reads.
#include "ringmaster/job/rank_phase.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace ringmaster::job {
namespace {

class RankPhaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("rank_phase_test." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

TEST_F(RankPhaseTest, TheReaderSeesThePhaseStepAndTimeTheWorkerEntered) {
  auto board = PhaseBoard::open(path("rank-0.phase"));
  ASSERT_TRUE(board.isOk()) << board.status().message();
  auto fresh = readPhase(path("rank-0.phase"));
  ASSERT_TRUE(fresh.isOk()) << fresh.status().message();
  EXPECT_EQ(fresh->phase, RankPhase::kStarting);

  board->enter(RankPhase::kCompute, 812);
  board->enter(RankPhase::kAllreduce);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  auto reading = readPhase(path("rank-0.phase"));
  ASSERT_TRUE(reading.isOk()) << reading.status().message();
  EXPECT_EQ(reading->phase, RankPhase::kAllreduce);
  EXPECT_EQ(reading->step, 812u);
  EXPECT_GE(reading->seconds, 0.1);
  EXPECT_LT(reading->seconds, 5.0);
  EXPECT_STREQ(phaseName(reading->phase), "allreduce");
  EXPECT_TRUE(isCollective(reading->phase));
  EXPECT_FALSE(isCollective(RankPhase::kCompute));
}

// The file outlives the worker: a rank that died or hangs is read where it stopped.
TEST_F(RankPhaseTest, TheLastPhaseStaysReadableAfterTheWriterIsGone) {
  {
    auto board = PhaseBoard::open(path("rank-1.phase"));
    ASSERT_TRUE(board.isOk());
    board->enter(RankPhase::kCheckpoint, 40);
  }
  auto reading = readPhase(path("rank-1.phase"));
  ASSERT_TRUE(reading.isOk());
  EXPECT_EQ(reading->phase, RankPhase::kCheckpoint);
  EXPECT_EQ(reading->step, 40u);
}

TEST_F(RankPhaseTest, AMissingOrForeignFileIsAnErrorNotAPhase) {
  EXPECT_EQ(readPhase(path("none.phase")).status().code(), ErrorCode::kNotFound);
  std::ofstream(path("other.phase")) << "this is not a phase file at all, 32+ bytes long";
  auto foreign = readPhase(path("other.phase"));
  EXPECT_EQ(foreign.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(foreign.status().message().find("other.phase"), std::string::npos);
  EXPECT_EQ(PhaseBoard::open(path("no/such/dir/rank.phase")).status().code(), ErrorCode::kIo);
}

TEST_F(RankPhaseTest, ABoardWithoutAFileDoesNothing) {
  PhaseBoard none;
  none.enter(RankPhase::kCompute, 1);  // no crash, no file
  EXPECT_EQ(phaseNamed("allreduce"), RankPhase::kAllreduce);
  EXPECT_FALSE(phaseNamed("lunch"));
}

}  // namespace
}  // namespace ringmaster::job

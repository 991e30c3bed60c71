#include "worker/checkpoint_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace ringmaster::agent {
namespace {

class CheckpointWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/checkpoint-writer-test-XXXXXX";
    dir_ = ::mkdtemp(pattern);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static train::CheckpointState state(uint64_t step) {
    train::CheckpointState s;
    s.step = step;
    s.batch_size = 4;
    s.params.assign(300000, 0.0f);  // 1.2 MB: a write that takes a moment
    for (size_t i = 0; i < s.params.size(); ++i) s.params[i] = static_cast<float>(step + i);
    return s;
  }

  size_t files() const {
    size_t n = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      n += entry.path().extension() == ".rmck";
    }
    return n;
  }

  std::string dir_;
};

TEST_F(CheckpointWriterTest, WritesInTheBackgroundAndReportsEachOnceWhenOnDisk) {
  CheckpointWriter writer(dir_, 0);
  EXPECT_TRUE(writer.takeWritten().empty());
  ASSERT_TRUE(writer.start(state(10), CheckpointWriter::Clock::now()).isOk());
  ASSERT_TRUE(writer.wait().isOk());
  auto written = writer.takeWritten();
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(written[0].step, 10u);
  EXPECT_GE(written[0].blocked_s, 0.0);
  EXPECT_GT(written[0].write_s, 0.0);
  EXPECT_TRUE(writer.takeWritten().empty());  // once

  ASSERT_TRUE(writer.wait().isOk());
  ASSERT_TRUE(writer.start(state(20), CheckpointWriter::Clock::now()).isOk());
  ASSERT_TRUE(writer.wait().isOk());
  auto loaded = train::loadLatestCheckpoint(dir_);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  EXPECT_EQ(loaded->state.step, 20u);
  EXPECT_EQ(loaded->state.params, state(20).params);
  EXPECT_EQ(writer.takeWritten().at(0).step, 20u);
}

TEST_F(CheckpointWriterTest, KeepsTheNewestAsAskedAndTheDestructorFinishesTheLastWrite) {
  {
    CheckpointWriter writer(dir_, 2);
    for (uint64_t step : {1, 2, 3}) {
      ASSERT_TRUE(writer.wait().isOk());
      ASSERT_TRUE(writer.start(state(step), CheckpointWriter::Clock::now()).isOk());
    }
  }  // step 3 is still being written here
  EXPECT_EQ(files(), 2u);
  auto loaded = train::loadLatestCheckpoint(dir_);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  EXPECT_EQ(loaded->state.step, 3u);
}

TEST_F(CheckpointWriterTest, AFailedWriteIsReturnedByWaitAndByTheNextStart) {
  const std::string blocked = dir_ + "/not-a-dir";
  std::ofstream(blocked) << "a file where the checkpoint directory should be";
  CheckpointWriter writer(blocked, 0);
  ASSERT_TRUE(writer.start(state(5), CheckpointWriter::Clock::now()).isOk());
  const Status waited = writer.wait();
  ASSERT_FALSE(waited.isOk());
  EXPECT_NE(waited.message().find("not-a-dir"), std::string::npos) << waited.message();
  EXPECT_TRUE(writer.takeWritten().empty());
  const Status again = writer.start(state(6), CheckpointWriter::Clock::now());
  EXPECT_FALSE(again.isOk());
  EXPECT_EQ(again.message(), waited.message());
}

}  // namespace
}  // namespace ringmaster::agent

#include "ringmaster/train/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ringmaster/util/crc32.h"

namespace ringmaster::train {
namespace {

namespace fs = std::filesystem;

class CheckpointTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("rm_ckpt_test_" + std::to_string(::getpid()) + "_" +
             testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static CheckpointState makeState(uint64_t step) {
    CheckpointState s;
    s.step = step;
    s.epoch = step / 10;
    s.sampler = {step / 10, (step % 10) * 64};
    s.world_size = 4;
    s.batch_size = 64;
    for (int i = 0; i < 1000; ++i) s.params.push_back(0.001f * static_cast<float>(i) + step);
    s.optimizer_state = "opt-state-" + std::to_string(step);
    return s;
  }

  static std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void writeFile(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }

  std::string dir_;
};

TEST_F(CheckpointTest, RoundTripsEveryField) {
  const CheckpointState saved = makeState(120);
  ASSERT_TRUE(saveCheckpoint(dir_, saved).isOk());
  const std::string path = checkpointPath(dir_, 120);
  EXPECT_EQ(fs::path(path).filename(), "ckpt-000000000120.rmck");
  Result<CheckpointState> loaded = readCheckpoint(path);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  EXPECT_EQ(loaded->step, 120u);
  EXPECT_EQ(loaded->epoch, 12u);
  EXPECT_EQ(loaded->sampler, saved.sampler);
  EXPECT_EQ(loaded->world_size, 4u);
  EXPECT_EQ(loaded->batch_size, 64u);
  EXPECT_EQ(loaded->params, saved.params);
  EXPECT_EQ(loaded->optimizer_state, saved.optimizer_state);
  // Nothing but the checkpoint is left behind (no temporary files).
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(CheckpointTest, LoadsTheNewestCheckpoint) {
  for (uint64_t step : {10, 30, 20}) ASSERT_TRUE(saveCheckpoint(dir_, makeState(step)).isOk());
  Result<LoadedCheckpoint> latest = loadLatestCheckpoint(dir_);
  ASSERT_TRUE(latest.isOk()) << latest.status().toString();
  EXPECT_EQ(latest->state.step, 30u);
  EXPECT_EQ(latest->path, checkpointPath(dir_, 30));
  EXPECT_TRUE(latest->skipped.empty());
}

TEST_F(CheckpointTest, CorruptNewestFileIsSkippedWithItsReason) {
  ASSERT_TRUE(saveCheckpoint(dir_, makeState(10)).isOk());
  ASSERT_TRUE(saveCheckpoint(dir_, makeState(20)).isOk());
  const std::string newest = checkpointPath(dir_, 20);
  std::string bytes = readFile(newest);
  bytes[bytes.size() / 2] ^= 0x40;  // a flipped bit in the parameters
  writeFile(newest, bytes);

  Result<LoadedCheckpoint> latest = loadLatestCheckpoint(dir_);
  ASSERT_TRUE(latest.isOk()) << latest.status().toString();
  EXPECT_EQ(latest->state.step, 10u);
  ASSERT_EQ(latest->skipped.size(), 1u);
  EXPECT_NE(latest->skipped[0].find(newest), std::string::npos) << latest->skipped[0];
  EXPECT_NE(latest->skipped[0].find("CRC mismatch"), std::string::npos) << latest->skipped[0];
}

TEST_F(CheckpointTest, PartialFileIsSkippedAsTruncated) {
  ASSERT_TRUE(saveCheckpoint(dir_, makeState(10)).isOk());
  ASSERT_TRUE(saveCheckpoint(dir_, makeState(20)).isOk());
  const std::string newest = checkpointPath(dir_, 20);
  const std::string bytes = readFile(newest);
  writeFile(newest, bytes.substr(0, bytes.size() - 100));

  Result<LoadedCheckpoint> latest = loadLatestCheckpoint(dir_);
  ASSERT_TRUE(latest.isOk());
  EXPECT_EQ(latest->state.step, 10u);
  ASSERT_EQ(latest->skipped.size(), 1u);
  EXPECT_NE(latest->skipped[0].find("truncated"), std::string::npos) << latest->skipped[0];

  writeFile(newest, bytes.substr(0, 5));
  latest = loadLatestCheckpoint(dir_);
  ASSERT_TRUE(latest.isOk());
  EXPECT_NE(latest->skipped.at(0).find("header"), std::string::npos) << latest->skipped[0];
}

TEST_F(CheckpointTest, ForeignFileAndWrongVersionAreRefusedWithAReason) {
  ASSERT_TRUE(saveCheckpoint(dir_, makeState(5)).isOk());
  const std::string path = checkpointPath(dir_, 5);
  std::string bytes = readFile(path);
  bytes[8] = 99;  // the version field
  writeFile(path, bytes);
  Result<CheckpointState> wrong_version = readCheckpoint(path);
  ASSERT_FALSE(wrong_version.isOk());
  EXPECT_EQ(wrong_version.status().code(), ErrorCode::kUnsupportedVersion);
  EXPECT_NE(wrong_version.status().message().find("version 99"), std::string::npos);

  writeFile(path, "this is not a checkpoint at all, just text");
  Result<CheckpointState> foreign = readCheckpoint(path);
  ASSERT_FALSE(foreign.isOk());
  EXPECT_NE(foreign.status().message().find("not a Ringmaster checkpoint"), std::string::npos);
}

TEST_F(CheckpointTest, NoValidCheckpointIsNotFoundAndListsWhatWasSkipped) {
  Result<LoadedCheckpoint> missing = loadLatestCheckpoint(dir_);
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);

  fs::create_directories(dir_);
  writeFile(checkpointPath(dir_, 7), "garbage");
  writeFile(dir_ + "/.ckpt-000000000009.rmck.tmp.123", "a temporary file is ignored");
  writeFile(dir_ + "/notes.txt", "ignored");
  Result<LoadedCheckpoint> none = loadLatestCheckpoint(dir_);
  ASSERT_FALSE(none.isOk());
  EXPECT_EQ(none.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(none.status().message().find("ckpt-000000000007.rmck"), std::string::npos)
      << none.status().message();
}

TEST_F(CheckpointTest, KeepPrunesAllButTheNewest) {
  for (uint64_t step = 1; step <= 5; ++step) {
    ASSERT_TRUE(saveCheckpoint(dir_, makeState(step), 2).isOk());
  }
  EXPECT_FALSE(fs::exists(checkpointPath(dir_, 3)));
  EXPECT_TRUE(fs::exists(checkpointPath(dir_, 4)));
  EXPECT_TRUE(fs::exists(checkpointPath(dir_, 5)));
}

TEST(ParamChecksum, ChangesWithASingleBitAndFormatsAsHex) {
  std::vector<float> params(1000, 0.5f);
  const uint64_t before = paramChecksum(params);
  EXPECT_EQ(before, paramChecksum(params));
  params[999] = std::nextafter(0.5f, 1.0f);
  EXPECT_NE(before, paramChecksum(params));
  EXPECT_EQ(formatChecksum(0x0123456789abcdefULL), "0123456789abcdef");
  EXPECT_EQ(paramChecksum({}), 0xcbf29ce484222325ULL);  // the FNV-1a offset basis
}

TEST(Crc32, MatchesTheStandardCheckValue) {
  const std::string text = "123456789";
  EXPECT_EQ(crc32(text.data(), text.size()), 0xcbf43926u);
}

}  // namespace
}  // namespace ringmaster::train

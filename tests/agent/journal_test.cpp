#include "journal.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace ringmaster::agent {
namespace {

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/journal-test-XXXXXX";
    dir_ = ::mkdtemp(pattern);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static proto::JournalRecord metric(int rank, int64_t step, double loss) {
    proto::JournalRecord record;
    record.set_job("j");
    record.set_attempt(1);
    record.set_source("rank:" + std::to_string(rank));
    auto* m = record.mutable_metric();
    m->set_rank(rank);
    m->set_step(step);
    auto* v = m->add_values();
    v->set_name("loss");
    v->set_value(loss);
    return record;
  }

  static std::vector<proto::JournalRecord> readAll(Journal& journal, uint64_t from) {
    std::vector<std::string> bytes;
    EXPECT_TRUE(journal.read(from, 1000000, 1u << 30, &bytes).isOk());
    std::vector<proto::JournalRecord> out(bytes.size());
    for (size_t i = 0; i < bytes.size(); ++i) EXPECT_TRUE(out[i].ParseFromString(bytes[i]));
    return out;
  }

  std::string dir_;
};

TEST_F(JournalTest, AssignsDenseSequenceNumbersAndTimes) {
  auto journal = Journal::open(dir_);
  ASSERT_TRUE(journal.isOk());
  for (int i = 0; i < 10; ++i) {
    auto record = metric(0, i, 1.0 / (i + 1));
    auto seq = (*journal)->append(record);
    ASSERT_TRUE(seq.isOk());
    EXPECT_EQ(*seq, static_cast<uint64_t>(i + 1));
  }
  auto records = readAll(**journal, 1);
  ASSERT_EQ(records.size(), 10u);
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i].seq(), i + 1);
    EXPECT_GT(records[i].time(), 1.6e9);
    EXPECT_EQ(records[i].metric().step(), static_cast<int64_t>(i));
  }
}

TEST_F(JournalTest, SamplesWaitForTheirGroupAndLifecycleRecordsAreDueAtOnce) {
  auto journal = Journal::open(dir_);
  ASSERT_TRUE(journal.isOk());
  Journal& j = **journal;
  EXPECT_EQ(j.flushDueAt(), Journal::Clock::time_point::max());
  const auto before = Journal::Clock::now();
  for (int i = 0; i < 3; ++i) {
    auto record = metric(0, i, 1.0);
    ASSERT_TRUE(j.append(record).isOk());
  }
  // Three samples: appended, not yet visible, due a sample delay after the first.
  EXPECT_EQ(j.lastSeq(), 3u);
  EXPECT_EQ(j.flushedSeq(), 0u);
  EXPECT_GE(j.flushDueAt(), before + Journal::kSampleDelay);
  EXPECT_LE(j.flushDueAt(), Journal::Clock::now() + Journal::kSampleDelay);
  // A rank that exited is news: due now, and the samples before it go with it.
  proto::JournalRecord exited;
  exited.set_job("j");
  exited.mutable_rank_exited()->set_rank(0);
  ASSERT_TRUE(j.append(exited).isOk());
  EXPECT_LE(j.flushDueAt(), Journal::Clock::now());
  ASSERT_TRUE(j.flush().isOk());
  EXPECT_EQ(j.flushedSeq(), 4u);
  EXPECT_FALSE(j.unflushed());
  EXPECT_EQ(j.flushDueAt(), Journal::Clock::time_point::max());
  // Health samples wait like metrics.
  proto::JournalRecord health;
  health.mutable_health();
  ASSERT_TRUE(j.append(health).isOk());
  EXPECT_GT(j.flushDueAt(), Journal::Clock::now());
}

TEST_F(JournalTest, SurvivesReopenWithTheSameIdAndContinuesTheSequence) {
  std::string id;
  {
    auto journal = Journal::open(dir_);
    id = (*journal)->id();
    for (int i = 0; i < 3000; ++i) {
      auto record = metric(i % 4, i, i);
      ASSERT_TRUE((*journal)->append(record).isOk());
    }
  }
  auto journal = Journal::open(dir_);
  ASSERT_TRUE(journal.isOk());
  EXPECT_EQ((*journal)->id(), id);
  EXPECT_EQ((*journal)->lastSeq(), 3000u);
  auto record = metric(0, 3000, 0);
  EXPECT_EQ(*(*journal)->append(record), 3001u);
  // Reads starting anywhere (across index strides) return exactly the records from there.
  for (uint64_t from : {1ull, 1024ull, 1025ull, 2049ull, 3001ull}) {
    auto records = readAll(**journal, from);
    ASSERT_EQ(records.size(), 3001 - from + 1) << from;
    EXPECT_EQ(records.front().seq(), from);
  }
  EXPECT_TRUE(readAll(**journal, 3002).empty());
}

TEST_F(JournalTest, CutsATornTailAndKeepsEverythingBefore) {
  {
    auto journal = Journal::open(dir_);
    for (int i = 0; i < 5; ++i) {
      auto record = metric(0, i, i);
      ASSERT_TRUE((*journal)->append(record).isOk());
    }
  }
  const std::string path = dir_ + "/journal.log";
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 3);  // a crash in the middle of the last frame
  {
    std::ofstream garbage(path, std::ios::app | std::ios::binary);
    garbage << "\x07\x00";  // and some junk after it
  }
  auto journal = Journal::open(dir_);
  ASSERT_TRUE(journal.isOk());
  EXPECT_EQ((*journal)->lastSeq(), 4u);
  EXPECT_NE((*journal)->report().find("torn tail"), std::string::npos) << (*journal)->report();
  auto record = metric(0, 99, 0);
  EXPECT_EQ(*(*journal)->append(record), 5u);
  auto records = readAll(**journal, 1);
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records.back().metric().step(), 99);
}

// Offset of the frame of record `seq` (1-based) in a journal file.
uint64_t frameOffset(const std::string& path, uint64_t seq) {
  std::ifstream in(path, std::ios::binary);
  uint64_t offset = 0;
  for (uint64_t s = 1; s < seq; ++s) {
    uint32_t length = 0;
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(reinterpret_cast<char*>(&length), 4);
    offset += 8 + length;
  }
  return offset;
}

void flipByte(const std::string& path, uint64_t offset, uint8_t mask) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(static_cast<std::streamoff>(offset));
  char byte = 0;
  file.read(&byte, 1);
  byte = static_cast<char>(byte ^ mask);
  file.seekp(static_cast<std::streamoff>(offset));
  file.write(&byte, 1);
}

TEST_F(JournalTest, DamageInTheMiddleKeepsEveryIntactRecordUnderItsSeqAndStartsANewEpoch) {
  std::string old_id;
  {
    auto journal = Journal::open(dir_);
    old_id = (*journal)->id();
    for (int i = 0; i < 100; ++i) {
      auto record = metric(0, i, i);
      ASSERT_TRUE((*journal)->append(record).isOk());
    }
  }
  const std::string path = dir_ + "/journal.log";
  flipByte(path, frameOffset(path, 50) + 8 + 3, 0x10);  // a bit in record 50's payload

  auto journal = Journal::open(dir_);
  ASSERT_TRUE(journal.isOk()) << journal.status().message();
  EXPECT_NE((*journal)->id(), old_id);  // clients notice and read it again
  EXPECT_NE((*journal)->report().find("damaged"), std::string::npos) << (*journal)->report();
  EXPECT_NE((*journal)->report().find("1 record(s) lost (from seq 50)"), std::string::npos)
      << (*journal)->report();
  ASSERT_EQ((*journal)->lastSeq(), 101u);
  auto records = readAll(**journal, 1);
  ASSERT_EQ(records.size(), 101u);
  for (uint64_t seq = 1; seq <= 100; ++seq) {
    const auto& r = records[seq - 1];
    EXPECT_EQ(r.seq(), seq);
    if (seq == 50) {
      ASSERT_TRUE(r.has_journal_damage());
      EXPECT_EQ(r.journal_damage().first_lost_seq(), 50u);
    } else {
      EXPECT_EQ(r.metric().step(), static_cast<int64_t>(seq - 1)) << seq;
    }
  }
  // One more for clients that were past the damage, naming the file kept aside.
  ASSERT_TRUE(records.back().has_journal_damage());
  EXPECT_EQ(records.back().journal_damage().lost_records(), 1u);
  EXPECT_TRUE(std::filesystem::exists(records.back().journal_damage().kept_at()));
  // And it goes on from there, and reopens clean.
  auto record = metric(0, 500, 0);
  EXPECT_EQ(*(*journal)->append(record), 102u);
  journal->reset();
  auto again = Journal::open(dir_);
  EXPECT_TRUE((*again)->report().empty());
  EXPECT_EQ((*again)->lastSeq(), 102u);
}

TEST_F(JournalTest, ADamagedLengthFieldLosesOnlyItsRecord) {
  {
    auto journal = Journal::open(dir_);
    for (int i = 0; i < 60; ++i) {
      auto record = metric(0, i, i);
      ASSERT_TRUE((*journal)->append(record).isOk());
    }
  }
  const std::string path = dir_ + "/journal.log";
  flipByte(path, frameOffset(path, 30) + 2, 0x40);  // record 30's length: 4 MB more
  auto journal = Journal::open(dir_);
  ASSERT_TRUE(journal.isOk());
  auto records = readAll(**journal, 1);
  ASSERT_EQ(records.size(), 61u);
  EXPECT_TRUE(records[29].has_journal_damage());
  EXPECT_EQ(records[30].metric().step(), 30);
  EXPECT_EQ(records[59].metric().step(), 59);
}

TEST_F(JournalTest, ReadRespectsRecordAndByteLimitsButReturnsAtLeastOne) {
  auto journal = Journal::open(dir_);
  for (int i = 0; i < 100; ++i) {
    auto record = metric(0, i, i);
    ASSERT_TRUE((*journal)->append(record).isOk());
  }
  std::vector<std::string> out;
  ASSERT_TRUE((*journal)->read(10, 7, 1u << 20, &out).isOk());
  EXPECT_EQ(out.size(), 7u);
  out.clear();
  ASSERT_TRUE((*journal)->read(10, 100, 1, &out).isOk());
  EXPECT_EQ(out.size(), 1u);
}

}  // namespace
}  // namespace ringmaster::agent

// client::SlurmJobSync against journals written by the agent's own Journal, in a Slurm job
// directory's layout: everything lands in a real SQLite history once, across chunk boundaries
// (a journal of more than the reader's 4 MiB chunk), a frame still being written waits for the
// next poll, and a node whose agent has not started yet is skipped.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "journal.h"
#include "ringmaster/client/slurm_sync.h"

namespace ringmaster {
namespace {

namespace fs = std::filesystem;

proto::JournalRecord metric(const std::string& job, int rank, int64_t step) {
  proto::JournalRecord record;
  record.set_job(job);
  record.set_attempt(1);
  record.set_source("rank:" + std::to_string(rank));
  auto* m = record.mutable_metric();
  m->set_rank(rank);
  m->set_step(step);
  auto* v = m->add_values();
  v->set_name("loss");
  v->set_value(1.0 / static_cast<double>(step + 1));
  // Padding, so that the journal outgrows one read chunk with few records.
  auto* pad = m->add_values();
  pad->set_name(std::string(200, 'p'));
  pad->set_value(0);
  return record;
}

class SlurmJobSyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/rm_slurm_sync_XXXXXX";
    root_ = mkdtemp(pattern);
    dir_.root = root_ + "/job";
  }
  void TearDown() override { fs::remove_all(root_); }

  std::unique_ptr<agent::Journal> node(int run, int node, const std::string& agent) {
    fs::create_directories(dir_.nodeDir(run, node));
    slurm::NodeAddress address;
    address.node = node;
    address.agent = agent;
    address.endpoint = "tcp://127.0.0.1:1";
    EXPECT_TRUE(slurm::writeNodeAddress(dir_.addressFile(run, node), address).isOk());
    auto journal = agent::Journal::open(dir_.nodeDir(run, node) + "/journal");
    EXPECT_TRUE(journal.isOk());
    return std::move(*journal);
  }

  std::string root_;
  slurm::JobDir dir_;
};

TEST_F(SlurmJobSyncTest, EveryNodesJournalLandsOnceAcrossChunksAndPolls) {
  auto store = store::Store::open(root_ + "/history.db");
  ASSERT_TRUE(store.isOk());
  auto writer = store::BatchWriter::open(root_ + "/history.db");
  ASSERT_TRUE(writer.isOk());
  auto n1 = node(0, 0, "n1");
  auto n2 = node(0, 1, "n2");
  fs::create_directories(dir_.nodeDir(0, 2));  // node 2's agent has not started yet

  // About 6 MiB on n1: more than one read chunk.
  constexpr int kSteps = 20000;
  for (int step = 0; step < kSteps; ++step) {
    auto record = metric("j", 0, step);
    ASSERT_TRUE(n1->append(record).isOk());
  }
  ASSERT_TRUE(n1->flush().isOk());
  auto first = metric("j", 1, 0);
  ASSERT_TRUE(n2->append(first).isOk());
  ASSERT_TRUE(n2->flush().isOk());
  ASSERT_GT(fs::file_size(dir_.nodeDir(0, 0) + "/journal/journal.log"), 4u << 20);

  client::SlurmJobSync sync(dir_, store->get(), writer->get());
  std::map<std::string, int> seen;
  auto polled =
      sync.poll([&](const std::string& agent, const proto::JournalRecord&) { ++seen[agent]; });
  ASSERT_TRUE(polled.isOk()) << polled.status().message();
  EXPECT_EQ(*polled, static_cast<uint64_t>(kSteps + 1));
  EXPECT_EQ(seen["n1"], kSteps);
  EXPECT_EQ(seen["n2"], 1);
  ASSERT_TRUE((*writer)->flush().isOk());
  EXPECT_EQ(*(*store)->countMetrics("j"), kSteps * 2 + 2);  // loss and padding per record

  // Half a frame at the end of n2's journal (its agent is writing it): left for the next poll.
  auto second = metric("j", 1, 1);
  second.set_seq(2);
  const std::string payload = second.SerializeAsString();
  const std::string log = dir_.nodeDir(0, 1) + "/journal/journal.log";
  {
    std::ofstream out(log, std::ios::binary | std::ios::app);
    const uint32_t header[2] = {static_cast<uint32_t>(payload.size()),
                                agent::crc32(payload.data(), payload.size())};
    out.write(reinterpret_cast<const char*>(header), sizeof header);
    out.write(payload.data(), static_cast<std::streamsize>(payload.size() / 2));
  }
  EXPECT_EQ(*sync.poll(), 0u);
  {
    std::ofstream out(log, std::ios::binary | std::ios::app);
    out.write(payload.data() + payload.size() / 2,
              static_cast<std::streamsize>(payload.size() - payload.size() / 2));
  }
  EXPECT_EQ(*sync.poll(), 1u);
  ASSERT_TRUE((*writer)->flush().isOk());

  // Another client (a fresh reader) of the same history finds nothing new: the cursors hold.
  client::SlurmJobSync again(dir_, store->get(), writer->get());
  EXPECT_EQ(*again.poll(), 0u);
  EXPECT_EQ(*(*store)->countMetrics("j"), (kSteps + 2) * 2);
}

}  // namespace
}  // namespace ringmaster

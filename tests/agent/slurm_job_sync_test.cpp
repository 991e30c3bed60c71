// client::SlurmJobSync against journals written by the agent's own Journal, in a Slurm job
// directory's layout: everything lands in a real SQLite history once, across chunk boundaries
// (a journal of more than the reader's 4 MiB chunk), a frame still being written waits for the
// next poll, a node whose agent has not started yet is skipped, a record longer than a chunk is
// read whole, and damage is named and read past.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "journal.h"
#include "ringmaster/client/slurm_sync.h"
#include "ringmaster/protocol/journal_frame.h"

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

  // A real history file and its one writer.
  std::pair<std::unique_ptr<store::Reader>, std::unique_ptr<store::BatchWriter>> history() {
    auto store = store::Reader::open(root_ + "/history.db");
    auto writer = store::BatchWriter::open(root_ + "/history.db");
    EXPECT_TRUE(store.isOk() && writer.isOk());
    return {std::move(*store), std::move(*writer)};
  }

  std::string root_;
  slurm::JobDir dir_;
};

TEST_F(SlurmJobSyncTest, EveryNodesJournalLandsOnceAcrossChunksAndPolls) {
  auto [store, writer] = history();
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

  client::SlurmJobSync sync(dir_, store.get(), writer.get());
  std::map<std::string, int> seen;
  auto polled =
      sync.poll([&](const std::string& agent, const proto::JournalRecord&) { ++seen[agent]; });
  ASSERT_TRUE(polled.isOk()) << polled.status().message();
  EXPECT_EQ(*polled, static_cast<uint64_t>(kSteps + 1));
  EXPECT_EQ(seen["n1"], kSteps);
  EXPECT_EQ(seen["n2"], 1);
  ASSERT_TRUE(writer->flush().isOk());
  EXPECT_EQ(*store->countMetrics("j"), kSteps * 2 + 2);  // loss and padding per record

  // Half a frame at the end of n2's journal (its agent is writing it): left for the next poll.
  auto second = metric("j", 1, 1);
  second.set_seq(2);
  const std::string payload = second.SerializeAsString();
  const std::string log = dir_.nodeDir(0, 1) + "/journal/journal.log";
  {
    std::string frame;
    protocol::appendFrame(&frame, second);
    const size_t half = protocol::kFrameHeaderBytes + payload.size() / 2;
    std::ofstream out(log, std::ios::binary | std::ios::app);
    out.write(frame.data(), static_cast<std::streamsize>(half));
  }
  EXPECT_EQ(*sync.poll(), 0u);
  {
    std::ofstream out(log, std::ios::binary | std::ios::app);
    out.write(payload.data() + payload.size() / 2,
              static_cast<std::streamsize>(payload.size() - payload.size() / 2));
  }
  EXPECT_EQ(*sync.poll(), 1u);
  ASSERT_TRUE(writer->flush().isOk());

  // Another client (a fresh reader) of the same history finds nothing new: the cursors hold.
  client::SlurmJobSync again(dir_, store.get(), writer.get());
  EXPECT_EQ(*again.poll(), 0u);
  EXPECT_EQ(*store->countMetrics("j"), (kSteps + 2) * 2);
}

// A 6 MiB record (a rank's huge log line, an agent's inventory) is longer than a read chunk: it
// is read whole, and the records after it too, instead of waiting for it forever.
TEST_F(SlurmJobSyncTest, ARecordLongerThanAReadChunkIsReadWhole) {
  auto [store, writer] = history();
  auto n1 = node(0, 0, "n1");
  auto small = metric("j", 0, 0);
  auto huge = metric("j", 0, 1);
  huge.mutable_metric()->mutable_values(1)->set_name(std::string(6 << 20, 'h'));
  auto after = metric("j", 0, 2);
  for (auto* record : {&small, &huge, &after}) ASSERT_TRUE(n1->append(*record).isOk());
  ASSERT_TRUE(n1->flush().isOk());

  client::SlurmJobSync sync(dir_, store.get(), writer.get());
  std::vector<uint64_t> seqs;
  auto polled = sync.poll([&](const std::string&, const proto::JournalRecord& record) {
    seqs.push_back(record.seq());
  });
  ASSERT_TRUE(polled.isOk()) << polled.status().message();
  EXPECT_EQ(seqs, (std::vector<uint64_t>{1, 2, 3}));
  ASSERT_TRUE(writer->flush().isOk());
  EXPECT_EQ(*store->countMetrics("j"), 6);
}

// A flipped byte in the middle of a running agent's journal (a bad sector, a torn NFS write):
// the lost record is named in the history as damage, with where it was, and the records after
// it land, in this poll and the next ones. A bad frame at the very end stays a frame being
// written (nothing is lost until intact records follow it).
TEST_F(SlurmJobSyncTest, DamageIsNamedAndReadPast) {
  auto [store, writer] = history();
  auto n1 = node(0, 0, "n1");
  const std::string log = dir_.nodeDir(0, 0) + "/journal/journal.log";
  std::vector<uint64_t> ends;  // where each record's frame ends
  auto write = [&](int64_t step) {
    auto record = metric("j", 0, step);
    ASSERT_TRUE(n1->append(record).isOk());
    ASSERT_TRUE(n1->flush().isOk());
    ends.push_back(fs::file_size(log));
  };
  for (int step = 0; step < 3; ++step) write(step);
  auto flipByteAt = [&](uint64_t offset) {
    std::fstream file(log, std::ios::binary | std::ios::in | std::ios::out);
    file.seekg(static_cast<std::streamoff>(offset));
    const char byte = static_cast<char>(file.get() ^ 0x40);
    file.seekp(static_cast<std::streamoff>(offset));
    file.put(byte);
  };
  flipByteAt(ends[0] + 100);  // inside the second record's payload

  client::SlurmJobSync sync(dir_, store.get(), writer.get());
  std::vector<proto::JournalRecord> seen;
  auto collect = [&](const std::string&, const proto::JournalRecord& r) { seen.push_back(r); };
  auto polled = sync.poll(collect);
  ASSERT_TRUE(polled.isOk()) << polled.status().message();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_TRUE(seen[0].has_metric());
  ASSERT_TRUE(seen[1].has_journal_damage());
  EXPECT_EQ(seen[1].seq(), 2u);
  EXPECT_EQ(seen[1].journal_damage().lost_records(), 1u);
  EXPECT_EQ(seen[1].journal_damage().detail(),
            "bytes " + std::to_string(ends[0]) + "-" + std::to_string(ends[1]) + " unreadable");
  EXPECT_EQ(seen[1].journal_damage().kept_at(), log);
  EXPECT_TRUE(seen[2].has_metric());

  // The agent goes on writing; its next record is damaged at the end of the file: it waits.
  write(3);
  flipByteAt(ends[2] + 100);
  EXPECT_EQ(*sync.poll(collect), 0u);
  write(4);
  EXPECT_EQ(*sync.poll(collect), 2u);  // seq 4 named lost, seq 5 read
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_TRUE(seen[3].has_journal_damage());
  EXPECT_EQ(seen[4].seq(), 5u);

  ASSERT_TRUE(writer->flush().isOk());
  EXPECT_EQ(*store->countMetrics("j"), 3 * 2);
  auto events = store->events("");
  ASSERT_TRUE(events.isOk());
  int damage_events = 0;
  for (const auto& e : *events) damage_events += e.kind == "journal_damage" && e.problem ? 1 : 0;
  EXPECT_EQ(damage_events, 2);
}

}  // namespace
}  // namespace ringmaster

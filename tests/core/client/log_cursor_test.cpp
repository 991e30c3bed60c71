// LogCursor: the place of one reader in one rank's log, as ringmasterctl and the app keep it.
#include "ringmaster/client/log_cursor.h"

#include <gtest/gtest.h>

namespace ringmaster::client {
namespace {

proto::LogChunk chunk(const std::string& data, uint64_t offset, uint64_t size, bool finished) {
  proto::LogChunk c;
  c.set_data(data);
  c.set_offset(offset);
  c.set_size(size);
  c.set_finished(finished);
  return c;
}

TEST(LogCursorTest, FollowsALogChunkByChunkUntilTheExitedRanksLastByte) {
  LogCursor cursor("a1", 3);
  EXPECT_TRUE(cursor.wantsRead());
  EXPECT_FALSE(cursor.caughtUp());  // nothing known yet
  cursor.sent(7);
  EXPECT_TRUE(cursor.reading());
  EXPECT_FALSE(cursor.wantsRead());

  auto first = cursor.take(7, chunk("hello\nwor", 0, 20, false));
  ASSERT_TRUE(first && first->isOk());
  EXPECT_EQ(**first, "hello\nwor");
  EXPECT_EQ(cursor.offset(), 9u);
  EXPECT_FALSE(cursor.caughtUp());  // 11 more bytes are there already
  EXPECT_TRUE(cursor.wantsRead());

  cursor.sent(8);
  auto second = cursor.take(8, chunk("ld\n12345678", 9, 20, false));
  ASSERT_TRUE(second && second->isOk());
  EXPECT_TRUE(cursor.caughtUp());
  EXPECT_FALSE(cursor.complete());  // the rank still runs

  cursor.sent(9);
  auto last = cursor.take(9, chunk("9\n", 20, 22, true));
  ASSERT_TRUE(last && last->isOk());
  EXPECT_EQ(**last, "9\n");
  EXPECT_TRUE(cursor.complete());
  EXPECT_FALSE(cursor.wantsRead());
}

TEST(LogCursorTest, AnExitedRankIsCompleteOnlyOnceItsLastByteIsRead) {
  LogCursor cursor("a1", 0);
  cursor.sent(1);
  ASSERT_TRUE(cursor.take(1, chunk("abc", 0, 6, true)));
  EXPECT_FALSE(cursor.complete());
  cursor.sent(2);
  ASSERT_TRUE(cursor.take(2, chunk("def", 3, 6, true)));
  EXPECT_TRUE(cursor.complete());
}

TEST(LogCursorTest, IgnoresAnswersToOtherReadsAndKeepsErrorsApart) {
  LogCursor cursor("a2", 1);
  EXPECT_FALSE(cursor.take(5, chunk("x", 0, 1, false)));  // nothing asked
  cursor.sent(6);
  EXPECT_FALSE(cursor.take(5, chunk("x", 0, 1, false)));  // another read's answer
  EXPECT_TRUE(cursor.reading());

  auto failed = cursor.take(6, Result<proto::LogChunk>(unavailable("agent 'a2' is unreachable")));
  ASSERT_TRUE(failed);
  ASSERT_FALSE(failed->isOk());
  EXPECT_NE(failed->status().message().find("unreachable"), std::string::npos);
  EXPECT_EQ(cursor.offset(), 0u);
  EXPECT_TRUE(cursor.wantsRead());  // try again

  cursor.sent(7);
  auto misplaced = cursor.take(7, chunk("x", 100, 200, false));
  ASSERT_TRUE(misplaced);
  EXPECT_FALSE(misplaced->isOk());
  EXPECT_EQ(cursor.offset(), 0u);  // nothing taken from a chunk of another place
}

TEST(LogCursorTest, SkipsToTheTailOfALongLog) {
  LogCursor cursor("a1", 0);
  cursor.sent(1);
  ASSERT_TRUE(cursor.take(1, chunk(std::string(10, 'x'), 0, 1000, false)));
  cursor.skipTo(990);
  cursor.sent(2);
  auto tail = cursor.take(2, chunk(std::string(10, 'y'), 990, 1000, false));
  ASSERT_TRUE(tail && tail->isOk());
  EXPECT_EQ(**tail, std::string(10, 'y'));
  EXPECT_TRUE(cursor.caughtUp());
}

// A chunk at log offset 100 of "out1 ERR1 out2 ERR2": stderr at [105, 110) and [115, 120), and
// a range reaching past the chunk (the agent's, clipped).
TEST(LogCursorTest, ShowsOneStreamOfALogByTheChunksStderrRanges) {
  proto::LogChunk c = chunk("out1 ERR1 out2 ERR2 ", 100, 120, false);
  for (uint64_t at : {105, 110, 115, 120}) c.add_stderr_ranges(at);
  EXPECT_EQ(bytesOfStream(c, LogStream::kBoth), "out1 ERR1 out2 ERR2 ");
  EXPECT_EQ(bytesOfStream(c, LogStream::kStdout), "out1 out2 ");
  EXPECT_EQ(bytesOfStream(c, LogStream::kStderr), "ERR1 ERR2 ");
  // No ranges (an older agent): all of it is stdout.
  const proto::LogChunk plain = chunk("abc", 0, 3, false);
  EXPECT_EQ(bytesOfStream(plain, LogStream::kStdout), "abc");
  EXPECT_EQ(bytesOfStream(plain, LogStream::kStderr), "");
  // Ranges out of order, overlapping, outside the chunk or odd in number do not read past it.
  proto::LogChunk bad = chunk("0123456789", 50, 60, false);
  for (uint64_t at : {40, 53, 58, 55, 70, 90, 57}) bad.add_stderr_ranges(at);
  EXPECT_EQ(bytesOfStream(bad, LogStream::kStderr), "012");
  EXPECT_EQ(bytesOfStream(bad, LogStream::kStdout), "3456789");  // every byte in one stream

  LogCursor cursor("a1", 0);
  cursor.setStream(LogStream::kStderr);
  cursor.sent(1);
  proto::LogChunk first = chunk("out1 ERR1 ", 0, 20, false);
  first.add_stderr_ranges(5);
  first.add_stderr_ranges(10);
  auto taken = cursor.take(1, first);
  ASSERT_TRUE(taken && taken->isOk());
  EXPECT_EQ(**taken, "ERR1 ");
  EXPECT_EQ(cursor.offset(), 10u);  // the log's offsets, whatever is shown
}

}  // namespace
}  // namespace ringmaster::client

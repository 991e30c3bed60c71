// LogMatcher: every match of a text in a log fed in chunks of any size, as one pass over the
// whole log would find them.
#include "ringmaster/client/log_matcher.h"

#include <gtest/gtest.h>

#include <random>

namespace ringmaster::client {
namespace {

// The matches of `needle` in `log`, fed in chunks of the given sizes (the last repeated).
std::vector<uint64_t> find(std::string_view needle, std::string_view log,
                           const std::vector<size_t>& sizes) {
  LogMatcher matcher(needle);
  std::vector<uint64_t> matches;
  size_t at = 0;
  for (size_t i = 0; at < log.size(); ++i) {
    const size_t size = std::min(sizes[std::min(i, sizes.size() - 1)], log.size() - at);
    matcher.feed(at, log.substr(at, size), &matches);
    at += size;
  }
  return matches;
}

TEST(LogMatcher, FindsEveryMatchIgnoringCase) {
  const std::string log = "epoch 1 loss NaN\nepoch 2 loss nan\nERROR: NAN in grads\n";
  EXPECT_EQ(find("nan", log, {log.size()}), (std::vector<uint64_t>{13, 30, 41}));
  EXPECT_EQ(find("NaN", log, {1}), (std::vector<uint64_t>{13, 30, 41}));
  EXPECT_TRUE(find("missing", log, {4}).empty());
  EXPECT_TRUE(find("", log, {4}).empty());
}

TEST(LogMatcher, AMatchCutBetweenChunksIsFoundOnceAndMatchesDoNotOverlap) {
  EXPECT_EQ(find("aa", "aaaaa", {1}), (std::vector<uint64_t>{0, 2}));
  EXPECT_EQ(find("aa", "aaaaa", {3, 2}), (std::vector<uint64_t>{0, 2}));
  EXPECT_EQ(find("Traceback", "xxTrace", {7}), std::vector<uint64_t>{});
  EXPECT_EQ(find("Traceback", "xxTraceback (most recent", {5, 2, 100}), std::vector<uint64_t>{2});
}

TEST(LogMatcher, AnyChunkingFindsWhatOnePassFinds) {
  std::mt19937 random(7);
  std::string log;
  const char* words[] = {"step ", "loss ", "Loss", "los", "s\n", "LOSS\r", "x"};
  for (int i = 0; i < 20000; ++i) log += words[random() % 7];
  const std::vector<uint64_t> whole = find("loss", log, {log.size()});
  ASSERT_GT(whole.size(), 1000u);
  for (size_t size : {1, 2, 3, 5, 64, 4095}) {
    EXPECT_EQ(find("loss", log, {size}), whole) << "chunks of " << size;
  }
  EXPECT_EQ(find("loss", log, {7, 1, 300, 2, 9}), whole);
}

TEST(LogMatcher, AChunkThatDoesNotFollowTheLastStartsAfresh) {
  LogMatcher matcher("abc");
  std::vector<uint64_t> matches;
  matcher.feed(0, "xxab", &matches);
  matcher.feed(100, "c abc", &matches);  // a jump: "ab" + "c" is not a match
  EXPECT_EQ(matches, std::vector<uint64_t>{102});
}

}  // namespace
}  // namespace ringmaster::client

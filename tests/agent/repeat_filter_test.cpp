// RepeatFilter: a line repeated many times a second is written once, then counted.
#include "repeat_filter.h"

#include <gtest/gtest.h>

namespace ringmaster::agent {
namespace {

using Lines = std::vector<std::string>;
using std::chrono::milliseconds;

TEST(RepeatFilter, AFloodOfOneLineIsWrittenOnceThenCountedEvery30Seconds) {
  RepeatFilter filter;
  const auto t0 = RepeatFilter::Clock::now();
  const std::string full = "cannot flush the journal: No space left on device";
  size_t written = 0;
  // 419 times in 11 s, as the issue measured, then something else.
  for (int i = 0; i < 419; ++i) written += filter.take(full, t0 + milliseconds(i * 26)).size();
  EXPECT_EQ(written, 1u);
  EXPECT_EQ(filter.take("disk space is back", t0 + milliseconds(11000)),
            (Lines{"(the line above repeated 418 more times)", "disk space is back"}));
  // Going on for minutes: a count every 30 s.
  RepeatFilter slow;
  EXPECT_EQ(slow.take(full, t0).size(), 1u);
  EXPECT_TRUE(slow.take(full, t0 + milliseconds(1000)).empty());
  EXPECT_EQ(slow.take(full, t0 + milliseconds(31000)),
            (Lines{"(the line above repeated 2 more times)"}));
  EXPECT_TRUE(slow.take(full, t0 + milliseconds(32000)).empty());
}

TEST(RepeatFilter, DifferentLinesPassAsTheyAre) {
  RepeatFilter filter;
  EXPECT_EQ(filter.take("a"), Lines{"a"});
  EXPECT_EQ(filter.take("b"), Lines{"b"});
  EXPECT_EQ(filter.take("a"), Lines{"a"});
  EXPECT_EQ(filter.take("a"), Lines{});
  EXPECT_EQ(filter.take("b"), (Lines{"(the line above repeated 1 more time)", "b"}));
}

}  // namespace
}  // namespace ringmaster::agent

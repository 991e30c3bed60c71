#include "refusal_log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringmaster::agent {
namespace {

using std::chrono::seconds;

// A flood of refusals logs 3 lines per window here; the next window's first line says how many
// were left out, and then counts anew.
TEST(RefusalLogTest, AFloodIsLoggedAtMostNLinesPerWindowAndTheRestCounted) {
  std::vector<std::string> lines;
  RefusalLog log([&](const std::string& line) { lines.push_back(line); }, 3, seconds(10));
  const auto start = RefusalLog::Clock::now();
  for (int i = 0; i < 1000; ++i) log.refused("refused " + std::to_string(i), start);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2], "refused 2");

  log.refused("refused later", start + seconds(11));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[3], "refused later (and 997 more refused connection(s) before it, not logged)");
  log.refused("refused once more", start + seconds(12));
  EXPECT_EQ(lines.back(), "refused once more");
}

}  // namespace
}  // namespace ringmaster::agent

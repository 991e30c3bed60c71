// Which links a preflight tests and what its verdict names, on figures made here (preflight_test
// measures real links in network namespaces).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "ringmaster/client/preflight.h"

namespace ringmaster::client {
namespace {

// Every pair of a round is of two different agents, no agent twice in a round, no pair twice.
void expectValidRounds(const std::vector<std::vector<std::pair<int, int>>>& rounds, int n) {
  std::set<std::pair<int, int>> seen;
  for (const auto& round : rounds) {
    std::set<int> busy;
    for (const auto& [a, b] : round) {
      EXPECT_LT(a, b);
      EXPECT_GE(a, 0);
      EXPECT_LT(b, n);
      EXPECT_TRUE(busy.insert(a).second) << "agent " << a << " twice in a round";
      EXPECT_TRUE(busy.insert(b).second) << "agent " << b << " twice in a round";
      EXPECT_TRUE(seen.insert({a, b}).second) << a << " <-> " << b << " tested twice";
    }
  }
}

TEST(LinkRounds, UpToSixteenAgentsEveryPairIsTested) {
  for (int n : {2, 3, 4, 7, 16}) {
    const auto rounds = linkRounds(n, 1);
    expectValidRounds(rounds, n);
    size_t pairs = 0;
    for (const auto& round : rounds) pairs += round.size();
    EXPECT_EQ(pairs, static_cast<size_t>(n * (n - 1) / 2)) << n << " agents";
  }
}

// Past 16 agents: a ring and two random matchings, five rounds at most whatever the size, and
// every agent in at least three links (its two neighbours and a random one), so a host's bad
// link still stands out against its others.
TEST(LinkRounds, PastSixteenAgentsARingAndRandomPairsInFiveRounds) {
  for (int n : {17, 64, 65, 1000}) {
    const auto rounds = linkRounds(n, 42);
    expectValidRounds(rounds, n);
    EXPECT_LE(rounds.size(), 5u) << n << " agents";
    std::map<int, int> links;
    for (const auto& round : rounds) {
      for (const auto& [a, b] : round) {
        ++links[a];
        ++links[b];
      }
    }
    ASSERT_EQ(links.size(), static_cast<size_t>(n));
    int fewest = n;
    for (const auto& [agent, count] : links) fewest = std::min(fewest, count);
    EXPECT_GE(fewest, n % 2 ? 2 : 3) << n << " agents";  // odd: one sits out each matching
    for (int i = 0; i + 1 < n; ++i) {                    // the ring is whole
      bool found = false;
      for (const auto& round : rounds) {
        for (const auto& pair : round) found = found || pair == std::make_pair(i, i + 1);
      }
      EXPECT_TRUE(found) << i << " <-> " << i + 1 << " of " << n;
    }
  }
  EXPECT_EQ(linkRounds(64, 7), linkRounds(64, 7));  // the seed decides
  EXPECT_NE(linkRounds(64, 7), linkRounds(64, 8));
}

PreflightReport measured(const std::vector<std::tuple<std::string, std::string, double>>& links) {
  PreflightReport report;
  std::vector<double> rates;
  std::set<std::string> agents;
  for (const auto& [a, b, gbps] : links) {
    report.links.push_back({a, b, "", "", gbps, 50});
    rates.push_back(gbps);
    agents.insert(a);
    agents.insert(b);
  }
  for (const std::string& name : agents) report.agents.emplace_back().agent = name;
  std::sort(rates.begin(), rates.end());
  report.median_gbps = rates[rates.size() / 2];
  return report;
}

// One slow link among healthy ones is named as the link; a host whose every link is slow is
// named once, as the host, and its links are not listed again.
TEST(PreflightVerdict, AHostWhoseEveryLinkIsSlowIsNamedOnceAsTheHost) {
  PreflightReport one_link = measured({{"a1", "a2", 1.1},
                                       {"a1", "a3", 0.05},
                                       {"a1", "a4", 1.0},
                                       {"a2", "a3", 1.2},
                                       {"a2", "a4", 1.1},
                                       {"a3", "a4", 0.9}});
  auto problems = preflightVerdict(one_link, {});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "link a1 <-> a3: 0.05 GB/s, the median pair 1.1 GB/s");

  PreflightReport one_host = measured({{"a1", "a2", 1.1},
                                       {"a1", "a3", 0.05},
                                       {"a1", "a4", 1.2},
                                       {"a2", "a3", 0.07},
                                       {"a2", "a4", 1.1},
                                       {"a3", "a4", 0.06}});
  problems = preflightVerdict(one_host, {});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0],
            "a3: every link slow (3 of 3, 0.05-0.07 GB/s, the median pair 1.1 GB/s): its network "
            "interface or its switch port");

  // Two agents, one link: which end is slow cannot be told.
  problems =
      preflightVerdict(measured({{"a1", "a2", 0.05}, {"a3", "a4", 1.0}, {"a5", "a6", 1.1}}), {});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("link a1 <-> a2: ", 0), 0u) << problems[0];
}

}  // namespace
}  // namespace ringmaster::client

#include "ringmaster/job/placement.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ringmaster/job/spec.h"

namespace ringmaster::job {
namespace {

JobSpec specWithPlacement(std::vector<PlacementEntry> placement) {
  JobSpec spec;
  spec.name = "job";
  spec.file = "job.yaml";
  spec.placement = std::move(placement);
  for (const PlacementEntry& entry : spec.placement) spec.world_size += entry.ranks;
  return spec;
}

JobSpec specWithWorldSize(int world_size, int line = 4) {
  JobSpec spec;
  spec.name = "job";
  spec.file = "job.yaml";
  spec.world_size = world_size;
  spec.world_size_line = line;
  return spec;
}

const std::vector<AgentCapacity> kAgents = {
    {"node1", 4, 4},
    {"node2", 8, 3},
    {"gpu-box", 2, 0},
    {"node3", 2, 2},
};

TEST(Placement, ExplicitPlacementNumbersRanksInPlacementOrder) {
  const JobSpec spec = specWithPlacement({{"node2", 2, 5}, {"node1", 3, 7}});
  std::vector<AgentShare> shares;
  const std::vector<SpecDiagnostic> errors = resolvePlacement(spec, kAgents, &shares);
  ASSERT_TRUE(errors.empty()) << formatDiagnostics(errors);
  ASSERT_EQ(shares.size(), 2u);
  EXPECT_EQ(shares[0].agent, "node2");
  EXPECT_EQ(shares[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(shares[1].agent, "node1");
  EXPECT_EQ(shares[1].ranks, (std::vector<int>{2, 3, 4}));
}

TEST(Placement, ExplicitPlacementMayUseEveryFreeSlot) {
  const JobSpec spec = specWithPlacement({{"node1", 4, 5}, {"node2", 3, 6}, {"node3", 2, 7}});
  std::vector<AgentShare> shares;
  ASSERT_TRUE(resolvePlacement(spec, kAgents, &shares).empty());
  ASSERT_EQ(shares.size(), 3u);
  EXPECT_EQ(shares[2].ranks, (std::vector<int>{7, 8}));
}

TEST(Placement, WorldSizeFillsFreeSlotsInAgentOrder) {
  std::vector<AgentShare> shares;
  const std::vector<SpecDiagnostic> errors =
      resolvePlacement(specWithWorldSize(8), kAgents, &shares);
  ASSERT_TRUE(errors.empty()) << formatDiagnostics(errors);
  // node1 takes its 4 free slots, node2 its 3, gpu-box has none, node3 gets the last rank.
  ASSERT_EQ(shares.size(), 3u);
  EXPECT_EQ(shares[0].agent, "node1");
  EXPECT_EQ(shares[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(shares[1].agent, "node2");
  EXPECT_EQ(shares[1].ranks, (std::vector<int>{4, 5, 6}));
  EXPECT_EQ(shares[2].agent, "node3");
  EXPECT_EQ(shares[2].ranks, (std::vector<int>{7}));
}

TEST(Placement, SmallWorldSizeStaysOnTheFirstAgent) {
  std::vector<AgentShare> shares;
  ASSERT_TRUE(resolvePlacement(specWithWorldSize(2), kAgents, &shares).empty());
  ASSERT_EQ(shares.size(), 1u);
  EXPECT_EQ(shares[0].agent, "node1");
  EXPECT_EQ(shares[0].ranks, (std::vector<int>{0, 1}));
}

TEST(Placement, WorldSizeSkipsAgentsWithZeroFreeSlots) {
  const std::vector<AgentCapacity> agents = {{"busy", 4, 0}, {"idle", 2, 2}};
  std::vector<AgentShare> shares;
  ASSERT_TRUE(resolvePlacement(specWithWorldSize(2), agents, &shares).empty());
  ASSERT_EQ(shares.size(), 1u);
  EXPECT_EQ(shares[0].agent, "idle");
}

TEST(Placement, RejectsWorldSizeLargerThanAllFreeSlots) {
  std::vector<AgentShare> shares = {{"stale", {0}}};
  const std::vector<SpecDiagnostic> errors =
      resolvePlacement(specWithWorldSize(10, 6), kAgents, &shares);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].file, "job.yaml");
  EXPECT_EQ(errors[0].line, 6);
  EXPECT_EQ(errors[0].field, "world_size");
  EXPECT_NE(errors[0].message.find("9 free of 16"), std::string::npos) << errors[0].message;
  EXPECT_NE(errors[0].hint.find("node2 3/8"), std::string::npos) << errors[0].hint;
  EXPECT_TRUE(shares.empty());
}

TEST(Placement, RejectsWorldSizeWhenNoAgentsAreConnected) {
  const std::vector<SpecDiagnostic> errors = resolvePlacement(specWithWorldSize(1), {}, nullptr);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].hint, "no agents are connected");
}

TEST(Placement, RejectsUnknownAgentWithClosestNameHint) {
  const JobSpec spec = specWithPlacement({{"node1", 1, 5}, {"nod2", 1, 7}});
  std::vector<AgentShare> shares;
  const std::vector<SpecDiagnostic> errors = resolvePlacement(spec, kAgents, &shares);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].file, "job.yaml");
  EXPECT_EQ(errors[0].line, 7);
  EXPECT_EQ(errors[0].field, "placement[1].agent");
  EXPECT_NE(errors[0].message.find("unknown agent 'nod2'"), std::string::npos);
  EXPECT_EQ(errors[0].hint, "did you mean 'node2'?");
  EXPECT_TRUE(shares.empty());
}

TEST(Placement, RejectsUnknownAgentListingKnownAgentsWhenNoneIsClose) {
  const JobSpec spec = specWithPlacement({{"workstation", 1, 5}});
  const std::vector<SpecDiagnostic> errors = resolvePlacement(spec, kAgents, nullptr);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].hint, "known agents: node1, node2, gpu-box, node3");
}

TEST(Placement, RejectsMoreRanksThanFreeSlotsSayingHowManyAreFree) {
  const JobSpec spec = specWithPlacement({{"node2", 5, 9}});
  const std::vector<SpecDiagnostic> errors = resolvePlacement(spec, kAgents, nullptr);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].line, 9);
  EXPECT_EQ(errors[0].field, "placement[0].ranks");
  EXPECT_NE(errors[0].message.find("3 free of 8 slots"), std::string::npos) << errors[0].message;
  EXPECT_NE(errors[0].toString().find("job.yaml:9: error: placement[0].ranks:"), std::string::npos);
}

TEST(Placement, RejectsAgentWithZeroFreeSlots) {
  const JobSpec spec = specWithPlacement({{"gpu-box", 1, 5}});
  const std::vector<SpecDiagnostic> errors = resolvePlacement(spec, kAgents, nullptr);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("0 free of 2 slots"), std::string::npos) << errors[0].message;
}

TEST(Placement, RejectsDuplicateAgent) {
  const JobSpec spec = specWithPlacement({{"node1", 1, 5}, {"node2", 1, 6}, {"node1", 1, 7}});
  std::vector<AgentShare> shares;
  const std::vector<SpecDiagnostic> errors = resolvePlacement(spec, kAgents, &shares);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].line, 7);
  EXPECT_EQ(errors[0].field, "placement[2].agent");
  EXPECT_NE(errors[0].message.find("listed twice"), std::string::npos);
  EXPECT_NE(errors[0].message.find("line 5"), std::string::npos);
  EXPECT_TRUE(shares.empty());
}

TEST(Placement, ReportsEveryBadEntry) {
  const JobSpec spec = specWithPlacement({{"ghost", 1, 5}, {"node1", 9, 6}, {"node3", 1, 7}});
  const std::vector<SpecDiagnostic> errors = resolvePlacement(spec, kAgents, nullptr);
  ASSERT_EQ(errors.size(), 2u) << formatDiagnostics(errors);
  EXPECT_EQ(errors[0].line, 5);
  EXPECT_EQ(errors[1].line, 6);
}

TEST(Placement, RejectsNonPositiveRanksInHandBuiltSpec) {
  const JobSpec spec = specWithPlacement({{"node1", 0, 5}});
  const std::vector<SpecDiagnostic> errors = resolvePlacement(spec, kAgents, nullptr);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].field, "placement[0].ranks");
}

TEST(Placement, RejectsSpecWithNeitherPlacementNorWorldSize) {
  const std::vector<SpecDiagnostic> errors =
      resolvePlacement(specWithWorldSize(0), kAgents, nullptr);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].field, "world_size");
}

TEST(Placement, ResolvesAParsedSpecAndCarriesItsLines) {
  const SpecParseResult parsed = parseJobSpec(R"(name: a
launcher: command
command: [x]
placement:
  - agent: node1
    ranks: 2
  - agent: nodes3
    ranks: 1
)",
                                              "train.yaml");
  ASSERT_TRUE(parsed.ok()) << formatDiagnostics(parsed.errors);
  const std::vector<SpecDiagnostic> errors = resolvePlacement(*parsed.spec, kAgents, nullptr);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].file, "train.yaml");
  EXPECT_EQ(errors[0].line, 7);
  EXPECT_EQ(errors[0].hint, "did you mean 'node3'?");
}

}  // namespace
}  // namespace ringmaster::job

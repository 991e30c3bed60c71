// Job specs flattened to key → value rows and aligned for the config diff (Qt-free).
#include "history/spec_flatten.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ringmaster::gui {
namespace {

const char* const kSpecA = R"(name: resnet
launcher: torchrun
world_size: 4
command: [python3, train.py, --epochs, "3"]
env:
  NCCL_DEBUG: WARN
  OMP_NUM_THREADS: "4"
train:
  lr: 0.1
  schedule: {warmup: 100}
placement:
  - agent: gpu01
    ranks: 2
  - agent: gpu02
    ranks: 2
)";

// world_size and one env var differ; a key only B has.
const char* const kSpecB = R"(name: resnet
launcher: torchrun
world_size: 8
command: [python3, train.py, --epochs, "3"]
env:
  NCCL_DEBUG: INFO
  OMP_NUM_THREADS: "4"
train:
  lr: 0.1
  schedule: {warmup: 100}
  seed: 7
placement:
  - agent: gpu01
    ranks: 2
  - agent: gpu02
    ranks: 2
)";

TEST(SpecFlatten, JoinsNestedKeysAndIndexesListsOfMappings) {
  auto flat = flattenSpec(kSpecA);
  ASSERT_TRUE(flat.isOk()) << flat.status().toString();
  const FlatSpec expected = {{"name", "resnet"},
                             {"launcher", "torchrun"},
                             {"world_size", "4"},
                             {"command", "[python3, train.py, --epochs, 3]"},
                             {"env.NCCL_DEBUG", "WARN"},
                             {"env.OMP_NUM_THREADS", "4"},
                             {"train.lr", "0.1"},
                             {"train.schedule.warmup", "100"},
                             {"placement[0].agent", "gpu01"},
                             {"placement[0].ranks", "2"},
                             {"placement[1].agent", "gpu02"},
                             {"placement[1].ranks", "2"}};
  EXPECT_EQ(*flat, expected);
}

TEST(SpecFlatten, EmptyDocumentsAndContainersAndBadYaml) {
  EXPECT_TRUE(flattenSpec("")->empty());
  EXPECT_EQ(*flattenSpec("env: {}\nargs: []\nx: ~\n"),
            (FlatSpec{{"env", "{}"}, {"args", "[]"}, {"x", "null"}}));
  auto bad = flattenSpec("name: a\nenv: [unclosed\n");
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("line"), std::string::npos) << bad.status().toString();
}

TEST(SpecDiff, MarksTheRowsThatDifferIncludingKeysOneSpecLacks) {
  const auto rows = diffSpecs({*flattenSpec(kSpecA), *flattenSpec(kSpecB)});
  std::vector<std::string> differing;
  for (const SpecDiffRow& row : rows) {
    if (row.differs) differing.push_back(row.key);
  }
  EXPECT_EQ(differing, (std::vector<std::string>{"world_size", "env.NCCL_DEBUG", "train.seed"}));
  const auto seed = std::find_if(rows.begin(), rows.end(),
                                 [](const SpecDiffRow& r) { return r.key == "train.seed"; });
  ASSERT_NE(seed, rows.end());
  EXPECT_EQ(seed->present, (std::vector<bool>{false, true}));
  EXPECT_EQ(seed->values[1], "7");
  // The union keeps the first spec's order; a key only B has follows its predecessor in B.
  EXPECT_EQ(rows.front().key, "name");
  EXPECT_EQ(rows.size(), 13u);
  EXPECT_EQ((seed - 1)->key, "train.schedule.warmup");
  EXPECT_EQ((seed + 1)->key, "placement[0].agent");
}

TEST(SpecDiff, OneSpecDiffersInNothing) {
  for (const SpecDiffRow& row : diffSpecs({*flattenSpec(kSpecA)})) EXPECT_FALSE(row.differs);
}

}  // namespace
}  // namespace ringmaster::gui

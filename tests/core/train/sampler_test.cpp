#include "ringmaster/train/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ringmaster::train {
namespace {

DistributedSampler makeSampler(size_t size, int rank, int world, size_t batch, uint64_t seed) {
  SamplerOptions o;
  o.dataset_size = size;
  o.rank = rank;
  o.world_size = world;
  o.batch_size = batch;
  o.seed = seed;
  Result<DistributedSampler> sampler = DistributedSampler::create(o);
  EXPECT_TRUE(sampler.isOk()) << sampler.status().toString();
  return std::move(*sampler);
}

// Every index each rank draws in one epoch, batch by batch.
std::vector<std::vector<uint32_t>> drawEpoch(DistributedSampler* sampler) {
  std::vector<std::vector<uint32_t>> batches;
  std::vector<uint32_t> batch;
  while (sampler->nextBatch(&batch)) batches.push_back(batch);
  return batches;
}

class SamplerShardTest : public testing::TestWithParam<std::tuple<size_t, int>> {};

TEST_P(SamplerShardTest, ShardsAreDisjointCoveringAndEquallySized) {
  const auto [size, world] = GetParam();
  const size_t per_rank = (size + world - 1) / world;
  std::map<uint32_t, int> times_seen;
  size_t batches = 0;
  for (int rank = 0; rank < world; ++rank) {
    DistributedSampler sampler = makeSampler(size, rank, world, 7, 11);
    EXPECT_EQ(sampler.samplesPerEpoch(), per_rank);
    const auto drawn = drawEpoch(&sampler);
    if (rank == 0) batches = drawn.size();
    EXPECT_EQ(drawn.size(), batches) << "rank " << rank << " sees another number of batches";
    EXPECT_EQ(drawn.size(), sampler.batchesPerEpoch());
    size_t total = 0;
    for (const auto& batch : drawn) {
      EXPECT_LE(batch.size(), 7u);
      total += batch.size();
      for (uint32_t i : batch) {
        ASSERT_LT(i, size);
        ++times_seen[i];
      }
    }
    EXPECT_EQ(total, per_rank);
  }
  // Every sample is drawn; the padding (total - size draws) repeats some.
  EXPECT_EQ(times_seen.size(), size);
  size_t repeats = 0;
  for (const auto& [index, times] : times_seen) repeats += static_cast<size_t>(times - 1);
  EXPECT_EQ(repeats, per_rank * static_cast<size_t>(world) - size);
}

INSTANTIATE_TEST_SUITE_P(SizesAndWorlds, SamplerShardTest,
                         testing::Values(std::make_tuple(size_t{100}, 4),
                                         std::make_tuple(size_t{103}, 4),
                                         std::make_tuple(size_t{5}, 3),
                                         std::make_tuple(size_t{1000}, 1),
                                         std::make_tuple(size_t{2}, 8)));

TEST(DistributedSampler, SameSeedGivesTheSameShardOnEveryProcess) {
  DistributedSampler a = makeSampler(500, 1, 4, 16, 99);
  DistributedSampler b = makeSampler(500, 1, 4, 16, 99);
  EXPECT_EQ(drawEpoch(&a), drawEpoch(&b));
  a.startEpoch(3);
  b.startEpoch(3);
  EXPECT_EQ(a.shard(), b.shard());
  DistributedSampler c = makeSampler(500, 1, 4, 16, 100);
  EXPECT_NE(a.shard(), (c.startEpoch(3), c.shard()));
}

TEST(DistributedSampler, ReshufflesEveryEpoch) {
  DistributedSampler sampler = makeSampler(200, 0, 2, 10, 1);
  const std::vector<uint32_t> epoch0 = sampler.shard();
  sampler.startEpoch(1);
  const std::vector<uint32_t> epoch1 = sampler.shard();
  EXPECT_NE(epoch0, epoch1);
  sampler.startEpoch(0);
  EXPECT_EQ(sampler.shard(), epoch0);
}

TEST(DistributedSampler, RanksTakeInterleavedPositionsOfOnePermutation) {
  // With one rank the shard is the whole permutation; rank r of 4 takes positions r, r+4, ...
  DistributedSampler whole = makeSampler(40, 0, 1, 8, 5);
  for (int rank = 0; rank < 4; ++rank) {
    DistributedSampler part = makeSampler(40, rank, 4, 2, 5);
    for (size_t i = 0; i < part.shard().size(); ++i) {
      EXPECT_EQ(part.shard()[i], whole.shard()[i * 4 + static_cast<size_t>(rank)]);
    }
  }
}

TEST(DistributedSampler, UnshuffledOrderIsTheIdentity) {
  SamplerOptions o;
  o.dataset_size = 6;
  o.world_size = 2;
  o.rank = 1;
  o.batch_size = 2;
  o.shuffle = false;
  Result<DistributedSampler> sampler = DistributedSampler::create(o);
  ASSERT_TRUE(sampler.isOk());
  EXPECT_EQ(sampler->shard(), (std::vector<uint32_t>{1, 3, 5}));
}

TEST(DistributedSampler, RestoredPositionContinuesWithTheSameBatches) {
  DistributedSampler original = makeSampler(300, 2, 3, 8, 7);
  original.startEpoch(4);
  std::vector<uint32_t> batch;
  for (int i = 0; i < 5; ++i) original.nextBatch(&batch);
  const SamplerPosition saved = original.position();
  EXPECT_EQ(saved.epoch, 4u);
  EXPECT_EQ(saved.offset, 40u);

  DistributedSampler resumed = makeSampler(300, 2, 3, 8, 7);
  ASSERT_TRUE(resumed.restore(saved).isOk());
  EXPECT_EQ(resumed.position(), saved);
  EXPECT_EQ(resumed.batchesLeftInEpoch(), original.batchesLeftInEpoch());
  EXPECT_EQ(drawEpoch(&resumed), drawEpoch(&original));

  SamplerPosition past_end = saved;
  past_end.offset = 101;
  const Status bad = resumed.restore(past_end);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.message().find("offset 101"), std::string::npos) << bad.message();
}

// 4 ranks drew 3 batches each; 3 ranks go on: together they draw exactly the samples the 4 had
// not drawn, each once (plus padding up to equal shards).
TEST(DistributedSampler, APositionOfMoreRanksContinuesWithWhatTheyHadLeft) {
  SamplerOptions options;
  options.dataset_size = 1000;
  options.batch_size = 10;
  options.seed = 7;
  std::multiset<uint32_t> drawn;
  for (int rank = 0; rank < 4; ++rank) {
    options.world_size = 4;
    options.rank = rank;
    auto sampler = DistributedSampler::create(options);
    ASSERT_TRUE(sampler.isOk());
    std::vector<uint32_t> batch;
    for (int b = 0; b < 3; ++b) {
      ASSERT_TRUE(sampler->nextBatch(&batch));
      drawn.insert(batch.begin(), batch.end());
    }
  }
  std::multiset<uint32_t> rest;
  for (int rank = 0; rank < 3; ++rank) {
    options.world_size = 3;
    options.rank = rank;
    auto sampler = DistributedSampler::create(options);
    ASSERT_TRUE(sampler.isOk());
    ASSERT_TRUE(sampler->restore({0, 30}, /*written_world_size=*/4).isOk());
    EXPECT_EQ(sampler->samplesPerEpoch(), 294u);  // ceil(880 / 3)
    std::vector<uint32_t> batch;
    while (sampler->nextBatch(&batch)) rest.insert(batch.begin(), batch.end());
  }
  EXPECT_EQ(drawn.size(), 120u);
  std::set<uint32_t> all(drawn.begin(), drawn.end());
  for (uint32_t index : rest) all.insert(index);
  EXPECT_EQ(all.size(), 1000u) << "the epoch covers every sample";
  EXPECT_EQ(rest.size(), 3u * 294u);
  for (uint32_t index : drawn) EXPECT_EQ(rest.count(index), 0u) << "drawn twice: " << index;
}

TEST(DistributedSampler, LastBatchOfAnEpochMayBeShort) {
  DistributedSampler sampler = makeSampler(10, 0, 1, 4, 1);
  const auto batches = drawEpoch(&sampler);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[2].size(), 2u);
  EXPECT_EQ(sampler.batchesLeftInEpoch(), 0u);
  std::vector<uint32_t> batch = {1, 2};
  EXPECT_FALSE(sampler.nextBatch(&batch));
  EXPECT_TRUE(batch.empty());
}

TEST(DistributedSampler, CreateRejectsBadOptionsNamingTheField) {
  SamplerOptions o;
  o.dataset_size = 10;
  o.world_size = 2;
  o.rank = 2;
  Result<DistributedSampler> bad_rank = DistributedSampler::create(o);
  ASSERT_FALSE(bad_rank.isOk());
  EXPECT_NE(bad_rank.status().message().find("rank"), std::string::npos);
  o.rank = 0;
  o.batch_size = 0;
  Result<DistributedSampler> bad_batch = DistributedSampler::create(o);
  ASSERT_FALSE(bad_batch.isOk());
  EXPECT_NE(bad_batch.status().message().find("batch_size"), std::string::npos);
  o.batch_size = 1;
  o.dataset_size = 0;
  EXPECT_FALSE(DistributedSampler::create(o).isOk());
}

}  // namespace
}  // namespace ringmaster::train

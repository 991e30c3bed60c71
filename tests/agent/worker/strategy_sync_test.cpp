// StrategySync over real Gloo communicators (4 ranks on loopback threads): the compressed
// exchanges give every rank the average of what each rank's compressor sent, and local SGD's
// averaging the mean of the models.
#include "worker/strategy_sync.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

namespace ringmaster::agent {
namespace {

constexpr int kWorld = 4;

void onRanks(int size, const std::function<void(int, comm::Communicator*)>& body) {
  comm::InMemoryStore store;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      comm::GlooOptions options;
      options.rank = rank;
      options.size = size;
      options.store = &store;
      options.hostname = "127.0.0.1";
      auto communicator = comm::createGlooCommunicator(options);
      ASSERT_TRUE(communicator.isOk()) << communicator.status().toString();
      body(rank, communicator->get());
      (void)(*communicator)->barrier();  // no rank tears down while a peer still reduces
    });
  }
  for (auto& t : threads) t.join();
}

std::vector<float> rankGradient(int rank, size_t n) {
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i) {
    g[i] =
        0.001f * static_cast<float>((i * 7919 + static_cast<size_t>(rank) * 104729) % 1000) - 0.5f;
  }
  return g;
}

// What the ranks should end with: the mean over ranks of each one's own compressor's output.
std::vector<float> expectedAverage(train::Compression kind, size_t n, double ratio) {
  std::vector<float> sum(n, 0.0f);
  std::vector<float> one(n);
  for (int r = 0; r < kWorld; ++r) {
    train::GradientCompressor compressor(kind, n, ratio);
    const std::vector<float> g = rankGradient(r, n);
    if (kind == train::Compression::kTopK) {
      train::sumTopk(compressor.encodeTopk(g), 1.0f, one);
    } else {
      const auto halves = compressor.encodeFp16(g);
      for (size_t i = 0; i < n; ++i) one[i] = train::halfToFloat(halves[i]);
    }
    for (size_t i = 0; i < n; ++i) sum[i] += one[i];
  }
  for (float& v : sum) v /= kWorld;
  return sum;
}

TEST(StrategySync, CompressedExchangesAverageWhatEachRankSent) {
  const size_t n = 5000;
  for (auto kind : {train::Compression::kTopK, train::Compression::kFp16}) {
    train::StrategyConfig strategy;
    strategy.compression = kind;
    strategy.topk_ratio = 0.01;
    const std::vector<float> expected = expectedAverage(kind, n, 0.01);
    std::vector<std::vector<float>> results(kWorld);
    std::vector<double> bytes(kWorld);
    onRanks(kWorld, [&](int rank, comm::Communicator* communicator) {
      StrategySync sync(communicator, strategy, n);
      std::vector<float> grads = rankGradient(rank, n);
      ASSERT_TRUE(sync.reduceCompressed(grads).isOk());
      results[rank] = grads;
      bytes[rank] = sync.bytesSent(train::StepReport{});
      EXPECT_TRUE(sync.lossy());
      EXPECT_GT(sync.compressionError(), 0.0);
    });
    const bool topk = kind == train::Compression::kTopK;
    for (int r = 0; r < kWorld; ++r) {
      ASSERT_EQ(results[r].size(), n);
      for (size_t i = 0; i < n; ++i) {
        // top-k: the same float additions in the same order. fp16: each partial sum inside the
        // allreduce is rounded to half (11 bits; |partial sums| <= 2 here: 3 roundings of at
        // most 2^-10 each, divided by 4).
        const float tolerance = topk ? 0.0f : 1e-3f;
        ASSERT_NEAR(results[r][i], expected[i], tolerance) << "rank " << r << " index " << i;
      }
      EXPECT_EQ(results[r], results[0]) << "rank " << r << " differs from rank 0";
    }
    const double plain = train::allreduceBytesSent(n, sizeof(float), kWorld);
    if (topk) {
      EXPECT_EQ(bytes[0], 3.0 * 50 * 8);  // 3 peers x 50 pairs x 8 bytes
      EXPECT_GE(plain / bytes[0], 20.0);
    } else {
      EXPECT_EQ(bytes[0] * 2, plain);
    }
  }
}

TEST(StrategySync, LocalSgdAveragesTheModelsAndCountsBytesOnlyWhenItDoes) {
  const size_t n = 3000;
  train::StrategyConfig strategy;
  strategy.average_every = 4;
  onRanks(kWorld, [&](int rank, comm::Communicator* communicator) {
    StrategySync sync(communicator, strategy, n);
    std::vector<float> params(n, static_cast<float>(rank));
    ASSERT_TRUE(sync.averageParams(params).isOk());
    for (float v : params) ASSERT_EQ(v, 1.5f);  // (0 + 1 + 2 + 3) / 4
    EXPECT_FALSE(sync.lossy());
    train::StepReport report;
    EXPECT_EQ(sync.bytesSent(report), 0.0);
    EXPECT_EQ(sync.commSeconds(report), 0.0);  // a step between averagings exchanges nothing
    report.averaged = true;
    EXPECT_EQ(sync.bytesSent(report), 2.0 * 3 / 4 * 4 * n);
    EXPECT_GT(sync.commSeconds(report), 0.0);
  });
  // The default strategy: the gradient allreduce every step.
  StrategySync plain(nullptr, train::StrategyConfig{}, n);
  EXPECT_EQ(plain.bytesSent(train::StepReport{}), 0.0);  // one rank sends nothing
}

}  // namespace
}  // namespace ringmaster::agent

#include "worker/gradient_sync.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace ringmaster::agent {
namespace {

// Runs `body(rank, communicator)` on `size` threads joined by Gloo over loopback.
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
      // Only so that no rank tears down its context while a peer still uses it: a body that
      // breaks the communicator on purpose (a failed allreduce) makes this barrier fail too.
      (void)(*communicator)->barrier();
    });
  }
  for (auto& t : threads) t.join();
}

// Gradients of 3 "layers" [0,10) [10,1010) [1010,1013); rank r holds r + i at index i.
std::vector<float> rankGradients(int rank) {
  std::vector<float> grads(1013);
  for (size_t i = 0; i < grads.size(); ++i)
    grads[i] = static_cast<float>(rank) + static_cast<float>(i);
  return grads;
}

void expectAverageOfRanks(const std::vector<float>& grads, int size) {
  const float mean_rank = static_cast<float>(size - 1) / 2.0f;
  for (size_t i = 0; i < grads.size(); ++i) {
    ASSERT_FLOAT_EQ(grads[i], mean_rank + static_cast<float>(i)) << "index " << i;
  }
}

TEST(GradientSync, LayerHooksLastFirstGiveTheAverageInSmallBuckets) {
  onRanks(3, [](int rank, comm::Communicator* communicator) {
    GradientSync sync(communicator, comm::ReduceOp::kAverage,
                      /*bucket_bytes=*/256);  // forces several buckets
    for (int step = 0; step < 3; ++step) {
      std::vector<float> grads = rankGradients(rank);
      sync.onLayerReady(grads.data() + 1010, 3);
      sync.onLayerReady(grads.data() + 10, 1000);
      sync.onLayerReady(grads.data(), 10);
      ASSERT_TRUE(sync.finish(grads).isOk());
      expectAverageOfRanks(grads, 3);
      EXPECT_GE(sync.lastCommSeconds(), 0.0);
    }
  });
}

TEST(GradientSync, WithoutHooksTheWholeBufferIsOneBucket) {
  onRanks(2, [](int rank, comm::Communicator* communicator) {
    GradientSync sync(communicator);
    std::vector<float> grads = rankGradients(rank);
    ASSERT_TRUE(sync.finish(grads).isOk());
    expectAverageOfRanks(grads, 2);
  });
}

// The worker's mode: gradients already scaled by 1/world, summed.
TEST(GradientSync, SumOpLeavesTheSum) {
  onRanks(2, [](int rank, comm::Communicator* communicator) {
    GradientSync sync(communicator, comm::ReduceOp::kSum);
    std::vector<float> grads = rankGradients(rank);
    ASSERT_TRUE(sync.finish(grads).isOk());
    for (size_t i = 0; i < grads.size(); ++i) {
      ASSERT_FLOAT_EQ(grads[i], 1.0f + 2.0f * static_cast<float>(i)) << "index " << i;
    }
  });
}

TEST(GradientSync, PartialHooksLeaveTheFrontForFinish) {
  onRanks(2, [](int rank, comm::Communicator* communicator) {
    GradientSync sync(communicator);
    std::vector<float> grads = rankGradients(rank);
    sync.onLayerReady(grads.data() + 1010, 3);  // only the last layer reported
    ASSERT_TRUE(sync.finish(grads).isOk());
    expectAverageOfRanks(grads, 2);
  });
}

TEST(GradientSync, AFailedAllreduceFailsTheStep) {
  onRanks(2, [](int rank, comm::Communicator* communicator) {
    std::vector<float> grads = rankGradients(rank);
    if (rank == 1) communicator->abort();
    GradientSync sync(communicator);
    Status status = sync.finish(grads);
    EXPECT_FALSE(status.isOk());
  });
}

TEST(GradientSync, WithoutOverlapHooksAreIgnoredAndFinishReducesEverything) {
  onRanks(2, [](int rank, comm::Communicator* communicator) {
    GradientSync sync(communicator, comm::ReduceOp::kAverage, /*bucket_bytes=*/256,
                      GradientSync::Overlap::kNever);
    std::vector<float> grads = rankGradients(rank);
    sync.onLayerReady(grads.data() + 1010, 3);
    sync.onLayerReady(grads.data() + 10, 1000);
    EXPECT_FALSE(sync.overlapping());
    ASSERT_TRUE(sync.finish(grads).isOk());
    expectAverageOfRanks(grads, 2);
    EXPECT_EQ(sync.lastCommSeconds(), sync.lastWaitSeconds());  // all of it waited for
  });
}

// Overlap::kMeasure over the trial and beyond: every step's average is right whichever way it was
// reduced, the turns alternate after the warm-up, and the ranks settle on the way whose steps
// were shorter, alike. Rank 0 makes one way slow on purpose (as a crowded core makes overlap).
void measureAndChoose(bool slow_overlap) {
  onRanks(2, [slow_overlap](int rank, comm::Communicator* communicator) {
    GradientSync sync(communicator, comm::ReduceOp::kAverage, /*bucket_bytes=*/256,
                      GradientSync::Overlap::kMeasure);
    std::vector<bool> turns;
    for (uint64_t step = 0; step < GradientSync::kTrialSteps + 5; ++step) {
      std::vector<float> grads = rankGradients(rank);
      turns.push_back(sync.overlapping());
      sync.onLayerReady(grads.data() + 1010, 3);
      sync.onLayerReady(grads.data() + 10, 1000);
      sync.onLayerReady(grads.data(), 10);
      if (rank == 0 && sync.overlapping() == slow_overlap) {
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
      }
      ASSERT_TRUE(sync.finish(grads).isOk());
      expectAverageOfRanks(grads, 2);
      EXPECT_EQ(sync.choice().empty(), step + 1 < GradientSync::kTrialSteps) << "step " << step;
    }
    const uint64_t warm = GradientSync::kWarmupSteps, turn = GradientSync::kTurnSteps;
    EXPECT_TRUE(turns[0] && turns[warm - 1] && turns[warm]);
    EXPECT_FALSE(turns[warm + turn]);
    EXPECT_TRUE(turns[warm + 2 * turn]);
    EXPECT_EQ(sync.overlapping(), !slow_overlap);
    EXPECT_EQ(turns.back(), !slow_overlap);
    EXPECT_NE(sync.choice().find(slow_overlap ? "after backward" : "while backward runs"),
              std::string::npos)
        << sync.choice();
  });
}

TEST(GradientSync, MeasuringKeepsOverlapWhenItIsQuicker) { measureAndChoose(false); }
TEST(GradientSync, MeasuringDropsOverlapWhenItIsSlower) { measureAndChoose(true); }

// A step that fails with buckets queued and one in flight: the collective fails mid-step (rank 1
// aborts), and the owner frees the gradients right after stop(), as the worker does. stop() must
// return (no bucket left waiting), and under ASan any reduction after it is a use-after-free.
TEST(GradientSync, StopAfterACollectiveFailsMidStepLeavesTheBufferAlone) {
  onRanks(2, [](int rank, comm::Communicator* communicator) {
    auto grads = std::make_unique<std::vector<float>>(rankGradients(rank));
    auto sync = std::make_unique<GradientSync>(communicator, comm::ReduceOp::kAverage,
                                               /*bucket_bytes=*/64);
    // Many 16-float buckets, last layer first; rank 1's collectives fail from the third one on.
    for (size_t end = grads->size(), layer = 0; end > 0; ++layer) {
      const size_t count = std::min<size_t>(16, end);
      if (rank == 1 && layer == 2) communicator->abort();
      sync->onLayerReady(grads->data() + end - count, count);
      end -= count;
    }
    // The step fails before finish(): stop, then free.
    sync->stop();
    grads.reset();
    sync->stop();  // idempotent; the destructor stops again
    sync.reset();
  });
}

}  // namespace
}  // namespace ringmaster::agent

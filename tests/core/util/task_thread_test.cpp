// TaskThread: tasks run one at a time in the order posted, from any thread; the tick runs between
// them; destruction lets the running task finish and drops the rest.
#include "ringmaster/util/task_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace ringmaster {
namespace {

TEST(TaskThread, RunsTasksInTheOrderPostedFromAnyThread) {
  std::mutex mutex;
  std::vector<int> ran;
  std::promise<void> done;
  {
    TaskThread thread;
    std::vector<std::thread> posters;
    for (int p = 0; p < 4; ++p) {
      posters.emplace_back([&, p] {
        for (int i = 0; i < 100; ++i) {
          thread.post([&, value = p * 1000 + i] {
            std::lock_guard<std::mutex> lock(mutex);
            ran.push_back(value);
          });
        }
      });
    }
    for (std::thread& t : posters) t.join();
    thread.post([&] { done.set_value(); });
    done.get_future().wait();
  }
  ASSERT_EQ(ran.size(), 400u);
  // Each poster's own tasks ran in its order.
  for (int p = 0; p < 4; ++p) {
    int last = -1;
    for (int value : ran) {
      if (value / 1000 != p) continue;
      EXPECT_GT(value, last);
      last = value;
    }
  }
}

TEST(TaskThread, TicksBetweenTasksAndDropsWhatIsQueuedWhenDestroyed) {
  std::atomic<int> ticks{0};
  std::atomic<int> ran{0};
  std::promise<void> started;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::thread releaser;
  {
    TaskThread thread([&] { ++ticks; }, std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_GE(ticks.load(), 2) << "the tick runs with no task posted";
    thread.post([&] {
      started.set_value();
      released.wait();
      ++ran;
    });
    for (int i = 0; i < 10; ++i) thread.post([&] { ++ran; });
    started.get_future().wait();
    // The destructor below waits for the running task, which we release from another thread.
    releaser = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      release.set_value();
    });
  }
  releaser.join();
  EXPECT_EQ(ran.load(), 1) << "the running task finished; the ten queued were dropped";
}

}  // namespace
}  // namespace ringmaster

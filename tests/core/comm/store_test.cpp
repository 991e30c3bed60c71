#include "ringmaster/comm/store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <thread>

namespace ringmaster::comm {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(InMemoryStore, GetReturnsWhatWasSet) {
  InMemoryStore store;
  ASSERT_TRUE(store.set("a", std::string("x\0y", 3)).isOk());
  auto value = store.get("a", 10ms);
  ASSERT_TRUE(value.isOk()) << value.status().toString();
  EXPECT_EQ(*value, std::string("x\0y", 3));
  EXPECT_EQ(store.size(), 1u);
}

TEST(InMemoryStore, SetReplacesValue) {
  InMemoryStore store;
  ASSERT_TRUE(store.set("a", "1").isOk());
  ASSERT_TRUE(store.set("a", "2").isOk());
  EXPECT_EQ(*store.get("a", 10ms), "2");
}

TEST(InMemoryStore, GetWaitsForALaterSet) {
  InMemoryStore store;
  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);
    ASSERT_TRUE(store.set("late", "value").isOk());
  });
  auto value = store.get("late", 5s);
  writer.join();
  ASSERT_TRUE(value.isOk()) << value.status().toString();
  EXPECT_EQ(*value, "value");
}

TEST(InMemoryStore, GetTimesOutNamingKeyAndTimeout) {
  InMemoryStore store;
  const auto start = Clock::now();
  auto value = store.get("missing", 100ms);
  EXPECT_GE(Clock::now() - start, 100ms);
  ASSERT_FALSE(value.isOk());
  EXPECT_EQ(value.status().code(), ErrorCode::kTimeout);
  EXPECT_NE(value.status().message().find("'missing'"), std::string::npos);
  EXPECT_NE(value.status().message().find("100 ms"), std::string::npos);
}

TEST(InMemoryStore, WaitNamesTheMissingKey) {
  InMemoryStore store;
  ASSERT_TRUE(store.set("k0", "").isOk());
  Status status = store.wait({"k0", "k1"}, 50ms);
  EXPECT_EQ(status.code(), ErrorCode::kTimeout);
  EXPECT_NE(status.message().find("'k1'"), std::string::npos) << status.message();
  ASSERT_TRUE(store.set("k1", "").isOk());
  EXPECT_TRUE(store.wait({"k0", "k1"}, 50ms).isOk());
}

// A store that implements only set() and get(), as a network-backed store might: the default
// wait() must work on top of them.
class MinimalStore : public KeyValueStore {
 public:
  Status set(const std::string& key, std::string_view value) override {
    return inner_.set(key, value);
  }
  Result<std::string> get(const std::string& key, std::chrono::milliseconds timeout) override {
    return inner_.get(key, timeout);
  }

 private:
  InMemoryStore inner_;
};

TEST(KeyValueStore, DefaultWaitSharesOneDeadline) {
  MinimalStore store;
  ASSERT_TRUE(store.set("a", "1").isOk());
  std::thread writer([&] {
    std::this_thread::sleep_for(30ms);
    ASSERT_TRUE(store.set("b", "2").isOk());
  });
  EXPECT_TRUE(store.wait({"a", "b"}, 5s).isOk());
  writer.join();

  const auto start = Clock::now();
  Status status = store.wait({"a", "c", "d"}, 100ms);
  const auto elapsed = Clock::now() - start;
  EXPECT_EQ(status.code(), ErrorCode::kTimeout);
  EXPECT_NE(status.message().find("'c'"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("100 ms"), std::string::npos) << status.message();
  // One deadline for all keys, not 100 ms per missing key.
  EXPECT_LT(elapsed, 1s);
}

}  // namespace
}  // namespace ringmaster::comm

// TcpRing (comm/tcp/tcp_ring.h) on its own: real sockets on loopback, ranks as threads. The
// communicator's tests (gloo_communicator_test, the *Tcp cases) run it through
// GlooCommunicator; these check what only shows here: every rank's floats equal bit for bit
// whatever the order of the values (halves too), a stranger that reaches the port is not taken for
// a rank, and a rank that goes away or never comes is named, and ranks that disagree on the count
// are told.
#include "comm/tcp/tcp_ring.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "ringmaster/comm/store.h"
#include "ringmaster/util/half.h"

namespace ringmaster::comm::tcp {
namespace {

using namespace std::chrono_literals;
using Clock = TcpRing::Clock;

sockaddr_storage loopback() {
  sockaddr_storage address{};
  auto& in = reinterpret_cast<sockaddr_in&>(address);
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

void onEveryRank(int size, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) threads.emplace_back(body, r);
  for (auto& t : threads) t.join();
}

std::vector<std::unique_ptr<TcpRing>> connectRing(int size, KeyValueStore& store) {
  std::vector<std::unique_ptr<TcpRing>> rings(size);
  onEveryRank(size, [&](int r) {
    auto ring = TcpRing::create(r, size, loopback(), store, "t/", Clock::now() + 10s);
    ASSERT_TRUE(ring.isOk()) << ring.status().toString();
    rings[r] = std::move(*ring);
  });
  return rings;
}

// Values whose float sum depends on the order they are added in, so that a rank summing a chunk
// in another order than its peers would end with other bits.
float valueAt(int rank, size_t i) {
  const float scales[] = {1e8f, 1.0f, -1e8f, 3e-3f};
  return scales[(rank + i) % 4] * (1.0f + static_cast<float>(i % 7) / 7.0f);
}

TEST(TcpRingTest, EveryRankGetsTheSameSumBitForBit) {
  for (int size : {2, 3, 4}) {
    InMemoryStore store;
    auto rings = connectRing(size, store);
    ASSERT_FALSE(HasFatalFailure());
    // Fewer floats than ranks (empty chunks), one piece, several pieces and a ragged end.
    for (size_t count : {size_t{1}, size_t{3}, size_t{1000}, (size_t{1} << 20) + 7}) {
      for (float scale : {1.0f, 1.0f / static_cast<float>(size)}) {
        std::vector<std::vector<float>> data(size);
        std::vector<Status> results(size);
        onEveryRank(size, [&](int r) {
          data[r].resize(count);
          for (size_t i = 0; i < count; ++i) data[r][i] = valueAt(r, i);
          results[r] = rings[r]->allreduce(data[r].data(), count, scale, Clock::now() + 10s,
                                           std::atomic<bool>{false});
        });
        for (int r = 0; r < size; ++r) ASSERT_TRUE(results[r].isOk()) << results[r].toString();
        for (int r = 1; r < size; ++r) {
          ASSERT_EQ(std::memcmp(data[r].data(), data[0].data(), count * sizeof(float)), 0)
              << size << " ranks, " << count << " floats: rank " << r << " differs from rank 0";
        }
        for (size_t i = 0; i < count; i += 997) {
          double expected = 0;
          for (int r = 0; r < size; ++r) expected += valueAt(r, i);
          expected *= scale;
          EXPECT_NEAR(data[0][i], expected, 1e-6 * 1e8 * size + 1e-3)
              << size << " ranks, element " << i;
        }
      }
    }
  }
}

TEST(TcpRingTest, HalvesToo) {
  InMemoryStore store;
  auto rings = connectRing(3, store);
  ASSERT_FALSE(HasFatalFailure());
  const size_t count = 100'003;
  std::vector<std::vector<uint16_t>> data(3);
  std::vector<Status> results(3);
  onEveryRank(3, [&](int r) {
    for (size_t i = 0; i < count; ++i) data[r].push_back(floatToHalf(valueAt(r, i) * 1e-5f));
    results[r] = rings[r]->allreduceHalf(data[r].data(), count, 1.0f / 3, Clock::now() + 10s,
                                         std::atomic<bool>{false});
  });
  for (int r = 0; r < 3; ++r) ASSERT_TRUE(results[r].isOk()) << results[r].toString();
  EXPECT_EQ(data[1], data[0]);
  EXPECT_EQ(data[2], data[0]);
  for (size_t i = 0; i < count; i += 991) {
    double expected = 0;
    for (int r = 0; r < 3; ++r) expected += halfToFloat(floatToHalf(valueAt(r, i) * 1e-5f));
    expected /= 3;
    EXPECT_NEAR(halfToFloat(data[0][i]), expected, 4e-3 * std::abs(expected) + 1e-3)
        << "element " << i;
  }
}

TEST(TcpRingTest, AStrangerWithoutTheTokenIsNotTakenForARank) {
  InMemoryStore store;
  std::vector<std::unique_ptr<TcpRing>> rings(2);
  bool stranger_dropped = false;
  std::thread rank0([&] {
    auto ring = TcpRing::create(0, 2, loopback(), store, "t/", Clock::now() + 10s);
    ASSERT_TRUE(ring.isOk()) << ring.status().toString();
    rings[0] = std::move(*ring);
  });
  // Before rank 1 comes, something else reaches rank 0's port and claims to be rank 1.
  auto record = store.get("t/ring/0", 10s);
  ASSERT_TRUE(record.isOk());
  int family = 0, port = 0;
  ASSERT_EQ(std::sscanf(record->c_str(), "%d %d", &family, &port), 2);
  int stranger = ::socket(AF_INET, SOCK_STREAM, 0);
  const sockaddr_storage address = loopback();
  sockaddr_in to = reinterpret_cast<const sockaddr_in&>(address);
  to.sin_port = htons(static_cast<uint16_t>(port));
  ASSERT_EQ(::connect(stranger, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  char hello[44] = {'R', 'M', 'R', 'I', 'N', 'G', '0', '1', 0, 0, 0, 1};
  std::memset(hello + 12, 'a', 32);
  ASSERT_EQ(::send(stranger, hello, sizeof(hello), 0), static_cast<ssize_t>(sizeof(hello)));
  // Rank 0 accepts only once it has connected to rank 1, and then in the order of arrival.
  std::thread rank1([&] {
    auto ring = TcpRing::create(1, 2, loopback(), store, "t/", Clock::now() + 10s);
    ASSERT_TRUE(ring.isOk()) << ring.status().toString();
    rings[1] = std::move(*ring);
  });
  char byte = 0;
  stranger_dropped = ::recv(stranger, &byte, 1, 0) == 0;  // closed by rank 0
  ::close(stranger);
  rank0.join();
  rank1.join();
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_TRUE(stranger_dropped);
  std::vector<float> a(100, 1.0f), b(100, 2.0f);
  Status sa, sb;
  std::thread t([&] {
    sa =
        rings[0]->allreduce(a.data(), a.size(), 1.0f, Clock::now() + 10s, std::atomic<bool>{false});
  });
  sb = rings[1]->allreduce(b.data(), b.size(), 1.0f, Clock::now() + 10s, std::atomic<bool>{false});
  t.join();
  ASSERT_TRUE(sa.isOk() && sb.isOk()) << sa.toString() << " / " << sb.toString();
  EXPECT_EQ(a[99], 3.0f);
  EXPECT_EQ(b[0], 3.0f);
}

TEST(TcpRingTest, ARankThatGoesAwayIsNamedAtOnce) {
  InMemoryStore store;
  auto rings = connectRing(3, store);
  ASSERT_FALSE(HasFatalFailure());
  std::vector<Status> results(2);
  std::vector<Clock::duration> took(2);
  std::thread leaver([&] {
    std::this_thread::sleep_for(200ms);
    rings[2].reset();  // the process of rank 2 exits: its sockets close
  });
  onEveryRank(2, [&](int r) {
    std::vector<float> data(1 << 20, 1.0f);
    const auto start = Clock::now();
    results[r] = rings[r]->allreduce(data.data(), data.size(), 1.0f, Clock::now() + 30s,
                                     std::atomic<bool>{false});
    took[r] = Clock::now() - start;
    if (!results[r].isOk()) rings[r]->shutdown();  // as the communicator does on a failure
  });
  leaver.join();
  // Rank 0 receives from rank 2: it names it. Rank 1 sends to rank 2, or waits on rank 0.
  EXPECT_EQ(results[0].code(), ErrorCode::kIo) << results[0].toString();
  EXPECT_NE(results[0].message().find("rank 2"), std::string::npos) << results[0].toString();
  EXPECT_FALSE(results[1].isOk());
  for (int r = 0; r < 2; ++r) EXPECT_LT(took[r], 5s) << "rank " << r;
}

TEST(TcpRingTest, AnAbsentRankTimesOutAndShutdownEndsAWait) {
  InMemoryStore store;
  auto rings = connectRing(2, store);
  ASSERT_FALSE(HasFatalFailure());
  std::vector<float> data(1000, 1.0f);
  const std::atomic<bool> not_aborted{false};
  auto start = Clock::now();
  Status timed_out =
      rings[0]->allreduce(data.data(), data.size(), 1.0f, start + 300ms, not_aborted);
  EXPECT_EQ(timed_out.code(), ErrorCode::kTimeout) << timed_out.toString();
  EXPECT_GE(Clock::now() - start, 300ms);

  InMemoryStore other;
  auto fresh = connectRing(2, other);
  ASSERT_FALSE(HasFatalFailure());
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    fresh[0]->shutdown();
  });
  start = Clock::now();
  Status cancelled = fresh[0]->allreduce(data.data(), data.size(), 1.0f, start + 30s, not_aborted);
  stopper.join();
  EXPECT_EQ(cancelled.code(), ErrorCode::kCancelled) << cancelled.toString();
  EXPECT_LT(Clock::now() - start, 2s);
  // Its neighbour sees the stream end.
  Status neighbour =
      fresh[1]->allreduce(data.data(), data.size(), 1.0f, Clock::now() + 5s, not_aborted);
  EXPECT_EQ(neighbour.code(), ErrorCode::kIo) << neighbour.toString();
}

TEST(TcpRingTest, RanksPassingDifferentCountsAreToldSo) {
  InMemoryStore store;
  auto rings = connectRing(2, store);
  ASSERT_FALSE(HasFatalFailure());
  std::vector<Status> results(2);
  onEveryRank(2, [&](int r) {
    std::vector<float> data(r == 0 ? 1000 : 999, 1.0f);
    results[r] = rings[r]->allreduce(data.data(), data.size(), 1.0f, Clock::now() + 10s,
                                     std::atomic<bool>{false});
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].code(), ErrorCode::kInvalidArgument) << results[r].toString();
    EXPECT_NE(results[r].message().find("same count"), std::string::npos) << results[r].toString();
  }
}

TEST(TcpRingTest, ARankThatNeverPublishesIsATimeout) {
  InMemoryStore store;
  auto ring = TcpRing::create(0, 2, loopback(), store, "t/", Clock::now() + 300ms);
  ASSERT_FALSE(ring.isOk());
  EXPECT_EQ(ring.status().code(), ErrorCode::kTimeout) << ring.status().toString();
}

}  // namespace
}  // namespace ringmaster::comm::tcp

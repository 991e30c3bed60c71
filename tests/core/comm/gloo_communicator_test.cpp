// Gloo communicator tests: one thread per rank over an InMemoryStore, on loopback, swept over 2, 3
// and 4 ranks, with allreduce through shared memory (the ranks share this host) and over TCP.

#include "comm/gloo/gloo_communicator.h"

#include <gloo/types.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "ringmaster/comm/communicator.h"
#include "ringmaster/comm/store.h"

namespace ringmaster::comm {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Comms = std::vector<std::unique_ptr<Communicator>>;

GlooOptions optionsFor(int rank, int size, KeyValueStore* store,
                       std::chrono::milliseconds timeout = 20s) {
  GlooOptions options;
  options.rank = rank;
  options.size = size;
  options.store = store;
  options.hostname = "127.0.0.1";
  options.timeout = timeout;
  return options;
}

// Runs fn(rank) on one thread per rank and joins them.
void onEveryRank(int size, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) threads.emplace_back(fn, r);
  for (auto& t : threads) t.join();
}

// Connects `size` ranks (in parallel, as they must) and returns their communicators.
//
// Once, in a CI run with other test processes beside it, one rank's Gloo connect was refused
// ("connect [127.0.0.1]:3975: Connection refused") after its peers had finished connecting: a
// Gloo pair's listener takes the first connection that arrives, with no handshake, so anything
// still dialling a port the kernel has just handed to that listener (another process's
// reconnecting socket, say) takes the pair's place. The set-up is then made once more, as a job's
// restart would; a second failure fails the test.
Comms connectAll(int size, KeyValueStore& store, bool shared_memory = true,
                 GlooOptions::Algorithm algorithm = GlooOptions::Algorithm::kAuto) {
  const auto attempt = [&](KeyValueStore& rendezvous, bool last) {
    Comms comms(size);
    std::vector<Status> failures(size);
    onEveryRank(size, [&](int r) {
      auto options = optionsFor(r, size, &rendezvous);
      options.allreduceAlgorithm = algorithm;
      options.sharedMemory = shared_memory;
      auto comm = createGlooCommunicator(options);
      if (comm.isOk()) {
        comms[r] = std::move(*comm);
      } else {
        failures[r] = comm.status();
      }
    });
    for (int r = 0; r < size; ++r) {
      if (!failures[r].isOk()) {
        if (last) ADD_FAILURE() << "rank " << r << ": " << failures[r].toString();
        return Comms{};
      }
    }
    return comms;
  };
  Comms comms = attempt(store, false);
  if (!comms.empty()) return comms;
  InMemoryStore again;
  return attempt(again, true);
}

// Ends like a well-behaved job: a barrier, then teardown (see communicator.h).
void finish(Comms& comms) {
  onEveryRank(static_cast<int>(comms.size()), [&](int r) {
    if (comms[r] && !comms[r]->isBroken()) {
      EXPECT_TRUE(comms[r]->barrier().isOk());
    }
  });
  comms.clear();
}

class GlooCommunicatorTest : public ::testing::TestWithParam<std::tuple<int, bool>> {
 protected:
  int size() const { return std::get<0>(GetParam()); }
  bool sharedMemory() const { return std::get<1>(GetParam()); }
  InMemoryStore store_;
};

TEST_P(GlooCommunicatorTest, ReportsRankAndSize) {
  Comms comms = connectAll(size(), store_, sharedMemory());
  ASSERT_EQ(comms.size(), static_cast<size_t>(size()));
  for (int r = 0; r < size(); ++r) {
    ASSERT_TRUE(comms[r]);
    EXPECT_EQ(comms[r]->rank(), r);
    EXPECT_EQ(comms[r]->size(), size());
    EXPECT_EQ(comms[r]->backend(), "gloo");
  }
  finish(comms);
}

TEST_P(GlooCommunicatorTest, AllreduceSumsOddSizesWithEveryAlgorithm) {
  for (auto algorithm : {GlooOptions::Algorithm::kRing, GlooOptions::Algorithm::kBcube,
                         GlooOptions::Algorithm::kAuto}) {
    InMemoryStore store;
    Comms comms = connectAll(size(), store, sharedMemory(), algorithm);
    ASSERT_FALSE(HasFatalFailure());
    for (size_t count : {size_t{1}, size_t{3}, size_t{17}, size_t{1001}, size_t{262147}}) {
      onEveryRank(size(), [&](int r) {
        std::vector<float> data(count);
        for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>(r) + 0.5f * (i % 1024);
        ASSERT_TRUE(comms[r]->allreduce(data.data(), count, ReduceOp::kSum).isOk());
        const float rankSum = static_cast<float>(size() * (size() - 1) / 2);
        for (size_t i = 0; i < count; ++i) {
          const float expected = rankSum + static_cast<float>(size()) * 0.5f * (i % 1024);
          if (data[i] != expected) {
            ADD_FAILURE() << "rank " << r << " count " << count << " element " << i << ": got "
                          << data[i] << ", expected " << expected;
            return;
          }
        }
      });
    }
    finish(comms);
  }
}

// float16 (fp16 gradient compression): half the bytes of float32, summed exactly while the sums
// stay representable; over TCP or shared memory (in chunks of a slot: 4099 halves fit in one,
// 300007 take three).
TEST_P(GlooCommunicatorTest, AllreduceSumsAndAveragesFloat16WithEveryAlgorithm) {
  for (auto algorithm : {GlooOptions::Algorithm::kRing, GlooOptions::Algorithm::kBcube,
                         GlooOptions::Algorithm::kAuto}) {
    InMemoryStore store;
    Comms comms = connectAll(size(), store, sharedMemory(), algorithm);
    ASSERT_FALSE(HasFatalFailure());
    for (size_t count : {size_t{1}, size_t{17}, size_t{4099}, size_t{300007}}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
        onEveryRank(size(), [&](int r) {
          std::vector<::gloo::float16> data(count);
          for (size_t i = 0; i < count; ++i) {
            data[i] = ::gloo::cpu_float2half_rn(static_cast<float>(r) + 0.5f * (i % 64));
          }
          ASSERT_TRUE(comms[r]->allreduce(data.data(), count, DataType::kFloat16, op).isOk());
          const float rankSum = static_cast<float>(size() * (size() - 1) / 2);
          for (size_t i = 0; i < count; ++i) {
            float expected = rankSum + static_cast<float>(size()) * 0.5f * (i % 64);
            if (op == ReduceOp::kAverage) {
              expected = ::gloo::cpu_half2float(
                  ::gloo::cpu_float2half_rn(expected * (1.0f / static_cast<float>(size()))));
            }
            const float got = ::gloo::cpu_half2float(data[i]);
            if (got != expected) {
              ADD_FAILURE() << "rank " << r << " count " << count << " element " << i << ": got "
                            << got << ", expected " << expected;
              return;
            }
          }
        });
      }
    }
    finish(comms);
  }
}

TEST_P(GlooCommunicatorTest, AllreduceAveragesAcrossRanks) {
  Comms comms = connectAll(size(), store_, sharedMemory());
  const size_t count = 4099;
  onEveryRank(size(), [&](int r) {
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i) data[i] = 2.0f * r + static_cast<float>(i % 7);
    ASSERT_TRUE(comms[r]->allreduce(data.data(), count, ReduceOp::kAverage).isOk());
    for (size_t i = 0; i < count; ++i) {
      ASSERT_FLOAT_EQ(data[i], static_cast<float>(size() - 1) + static_cast<float>(i % 7))
          << "rank " << r << " element " << i;
    }
  });
  finish(comms);
}

// Ranks on one host allreduce through shared memory unless told not to; sums and averages
// over several of its chunks (1 MiB) and an odd tail come out exact.
TEST_P(GlooCommunicatorTest, SharedMemoryIsUsedOnOneHostAndReducesAcrossChunks) {
  Comms comms = connectAll(size(), store_, sharedMemory());
  for (auto& comm : comms) {
    EXPECT_EQ(dynamic_cast<gloo::GlooCommunicator&>(*comm).usesSharedMemory(), sharedMemory());
    // The rank's log names the path its gradients take.
    EXPECT_NE(comm->transport().find(sharedMemory() ? "in shared memory" : "Ringmaster's TCP ring"),
              std::string::npos)
        << comm->transport();
  }
  const size_t count = (size_t{3} << 20) / sizeof(float) * 2 + 12345;  // 6 MiB and a tail
  onEveryRank(size(), [&](int r) {
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>(r + 1) * (i % 251);
    ASSERT_TRUE(comms[r]->allreduce(data.data(), count, ReduceOp::kAverage).isOk());
    const float mean = static_cast<float>(size() + 1) / 2;  // of 1..size
    for (size_t i = 0; i < count; ++i) {
      if (data[i] != mean * (i % 251)) {
        ADD_FAILURE() << "rank " << r << " element " << i << ": got " << data[i];
        return;
      }
    }
  });
  finish(comms);
}

// Values whose sum depends on its order: through shared memory every rank gets, bit for bit,
// the sum in rank order times the scale — whether one pass sums all the slots (small) or each
// rank sums its share of a chunk for the others (large, several chunks and a tail).
TEST_P(GlooCommunicatorTest, SharedMemorySumsInRankOrderBitForBit) {
  if (!sharedMemory()) GTEST_SKIP() << "over TCP Gloo's ring sums in another order";
  Comms comms = connectAll(size(), store_, sharedMemory());
  const auto value = [](int r, size_t i) {
    return std::ldexp(1.0f + static_cast<float>((i * 2654435761u + r * 40503u) % 9973) / 9973,
                      static_cast<int>((i + 7 * r) % 23) - 11);
  };
  for (size_t count : {size_t{1000}, size_t{16384}, size_t{300007}}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
      const float scale = op == ReduceOp::kSum ? 1.0f : 1.0f / static_cast<float>(size());
      onEveryRank(size(), [&](int r) {
        std::vector<float> data(count);
        for (size_t i = 0; i < count; ++i) data[i] = value(r, i);
        ASSERT_TRUE(comms[r]->allreduce(data.data(), count, op).isOk());
        for (size_t i = 0; i < count; ++i) {
          float expected = value(0, i);
          for (int q = 1; q < size(); ++q) expected += value(q, i);
          expected *= scale;
          if (std::memcmp(&data[i], &expected, sizeof(float)) != 0) {
            ADD_FAILURE() << "rank " << r << " count " << count << " element " << i << ": got "
                          << data[i] << ", expected " << expected;
            return;
          }
        }
      });
    }
  }
  finish(comms);
}

TEST_P(GlooCommunicatorTest, ZeroLengthCollectivesSucceed) {
  Comms comms = connectAll(size(), store_, sharedMemory());
  onEveryRank(size(), [&](int r) {
    EXPECT_TRUE(comms[r]->allreduce(static_cast<float*>(nullptr), 0).isOk());
    EXPECT_TRUE(comms[r]->allreduce(static_cast<float*>(nullptr), 0, ReduceOp::kAverage).isOk());
    EXPECT_TRUE(comms[r]->broadcast(nullptr, 0, size() - 1).isOk());
    EXPECT_TRUE(comms[r]->allgather(nullptr, nullptr, 0).isOk());
    // The communicator still works afterwards.
    float one = 1.0f;
    EXPECT_TRUE(comms[r]->allreduce(&one, 1).isOk());
    EXPECT_EQ(one, static_cast<float>(size()));
  });
  finish(comms);
}

TEST_P(GlooCommunicatorTest, Allreduces64MegabyteBuffer) {
  Comms comms = connectAll(size(), store_, sharedMemory());
  const size_t count = (64u << 20) / sizeof(float);
  onEveryRank(size(), [&](int r) {
    std::vector<float> data(count, static_cast<float>(r + 1));
    data[count - 1] = static_cast<float>(10 * r);
    ASSERT_TRUE(comms[r]->allreduce(data.data(), count, ReduceOp::kSum).isOk());
    const float expected = static_cast<float>(size() * (size() + 1) / 2);
    size_t wrong = 0;
    for (size_t i = 0; i + 1 < count; ++i) wrong += data[i] != expected;
    EXPECT_EQ(wrong, 0u) << "rank " << r;
    EXPECT_EQ(data[count - 1], static_cast<float>(10 * size() * (size() - 1) / 2));
  });
  finish(comms);
}

TEST_P(GlooCommunicatorTest, BroadcastsFromNonZeroRoot) {
  Comms comms = connectAll(size(), store_, sharedMemory());
  for (int root : {size() - 1, 1}) {
    const size_t bytes = 100003;
    onEveryRank(size(), [&](int r) {
      std::vector<unsigned char> data(bytes);
      for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<unsigned char>(i * 7 + r);
      ASSERT_TRUE(comms[r]->broadcast(data.data(), bytes, root).isOk());
      for (size_t i = 0; i < bytes; ++i) {
        ASSERT_EQ(data[i], static_cast<unsigned char>(i * 7 + root))
            << "rank " << r << " root " << root << " byte " << i;
      }
    });
  }
  finish(comms);
}

TEST_P(GlooCommunicatorTest, AllgathersInRankOrder) {
  Comms comms = connectAll(size(), store_, sharedMemory());
  // Through shared memory: one barrier up to half a slot (128 KB), chunks of a slot above.
  for (size_t bytesPerRank : {size_t{1}, size_t{7}, size_t{65537}, size_t{600001}}) {
    onEveryRank(size(), [&](int r) {
      std::vector<char> send(bytesPerRank);
      for (size_t i = 0; i < bytesPerRank; ++i) send[i] = static_cast<char>(r * 31 + i);
      std::vector<char> recv(bytesPerRank * size(), 0);
      ASSERT_TRUE(comms[r]->allgather(send.data(), recv.data(), bytesPerRank).isOk());
      for (int from = 0; from < size(); ++from) {
        for (size_t i = 0; i < bytesPerRank; ++i) {
          ASSERT_EQ(recv[from * bytesPerRank + i], static_cast<char>(from * 31 + i))
              << "rank " << r << " slot " << from << " byte " << i;
        }
      }
    });
  }
  finish(comms);
}

TEST_P(GlooCommunicatorTest, AllgathersInPlace) {
  Comms comms = connectAll(size(), store_, sharedMemory());
  onEveryRank(size(), [&](int r) {
    std::vector<int> all(size(), -1);
    all[r] = 100 + r;
    ASSERT_TRUE(comms[r]->allgather(&all[r], all.data(), sizeof(int)).isOk());
    for (int from = 0; from < size(); ++from) EXPECT_EQ(all[from], 100 + from);
  });
  finish(comms);
}

TEST_P(GlooCommunicatorTest, BarrierWaitsForTheLastRank) {
  Comms comms = connectAll(size(), store_, sharedMemory());
  std::atomic<int> arrived{0};
  onEveryRank(size(), [&](int r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(40 * r));
    arrived++;
    ASSERT_TRUE(comms[r]->barrier().isOk());
    EXPECT_EQ(arrived.load(), size()) << "rank " << r << " left the barrier early";
  });
  finish(comms);
}

// A pipeline's pattern: each rank passes a message to the next, with collectives in between (the
// point-to-point slots must not meet theirs), sizes from empty to several MB.
TEST_P(GlooCommunicatorTest, SendsAndReceivesAlongARingBetweenCollectives) {
  Comms comms = connectAll(size(), store_, sharedMemory());
  for (size_t bytes : {size_t{0}, size_t{5}, size_t{300001}, size_t{3} << 20}) {
    onEveryRank(size(), [&](int r) {
      const int next = (r + 1) % size(), prev = (r + size() - 1) % size();
      std::vector<char> out(bytes), in(bytes, 0);
      for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<char>(r * 7 + i);
      // Even ranks send first, odd ones receive first: a send waits for its recv.
      for (int turn = 0; turn < 2; ++turn) {
        if ((r % 2 == 0) == (turn == 0)) {
          ASSERT_TRUE(comms[r]->send(out.data(), bytes, next, 11).isOk());
        } else {
          ASSERT_TRUE(comms[r]->recv(in.data(), bytes, prev, 11).isOk());
        }
      }
      for (size_t i = 0; i < bytes; ++i) {
        ASSERT_EQ(in[i], static_cast<char>(prev * 7 + i)) << "rank " << r << " byte " << i;
      }
      float x = 1.0f;
      ASSERT_TRUE(comms[r]->allreduce(&x, 1).isOk());
      EXPECT_EQ(x, static_cast<float>(size()));
    });
  }
  finish(comms);
}

// A parameter server's pattern: rank 0 takes pushes from every other rank in whatever order they
// come, tells each sender apart, and answers it.
TEST_P(GlooCommunicatorTest, ReceivesFromWhicheverPeerSendsFirst) {
  Comms comms = connectAll(size(), store_, sharedMemory());
  constexpr int kRounds = 3;
  onEveryRank(size(), [&](int r) {
    if (r == 0) {
      std::vector<int> workers;
      for (int w = 1; w < size(); ++w) workers.push_back(w);
      std::vector<int> pushes(size(), 0);
      for (int i = 0; i < kRounds * (size() - 1); ++i) {
        int payload = -1;
        auto from = comms[0]->recvFromAny(&payload, sizeof payload, workers, 3);
        ASSERT_TRUE(from.isOk()) << from.status().toString();
        EXPECT_EQ(payload, *from * 100 + pushes[*from]);
        ++pushes[*from];
        ASSERT_TRUE(comms[0]->send(&payload, sizeof payload, *from, 4).isOk());
      }
      for (int w = 1; w < size(); ++w) EXPECT_EQ(pushes[w], kRounds);
    } else {
      for (int i = 0; i < kRounds; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(3 * (size() - r)));
        int payload = r * 100 + i, echo = -1;
        ASSERT_TRUE(comms[r]->send(&payload, sizeof payload, 0, 3).isOk());
        ASSERT_TRUE(comms[r]->recv(&echo, sizeof echo, 0, 4).isOk());
        EXPECT_EQ(echo, payload);
      }
    }
  });
  finish(comms);
}

// Through shared memory a send returns once its message is in the channel, so a receiver may
// ask for tags in another order than they were sent: what comes first is kept aside. (Over TCP a
// send waits for its recv, so this order would deadlock there.)
TEST_P(GlooCommunicatorTest, SharedMemoryKeepsAMessageOfAnotherTagAside) {
  if (!sharedMemory()) GTEST_SKIP() << "over TCP a send waits for the matching recv";
  Comms comms = connectAll(size(), store_, sharedMemory());
  onEveryRank(size(), [&](int r) {
    if (r == 0) {
      std::vector<float> big(40000, 1.5f);  // more than a channel: kept aside in chunks
      int small = 7;
      ASSERT_TRUE(comms[0]->send(big.data(), big.size() * sizeof(float), 1, 1).isOk());
      ASSERT_TRUE(comms[0]->send(&small, sizeof small, 1, 2).isOk());
    } else if (r == 1) {
      int small = 0;
      std::vector<float> big(40000, 0.0f);
      ASSERT_TRUE(comms[1]->recv(&small, sizeof small, 0, 2).isOk());
      ASSERT_TRUE(comms[1]->recv(big.data(), big.size() * sizeof(float), 0, 1).isOk());
      EXPECT_EQ(small, 7);
      EXPECT_EQ(big, std::vector<float>(40000, 1.5f));
    }
  });
  finish(comms);
}

TEST_P(GlooCommunicatorTest, RecvFromAMissingPeerTimesOutAndBreaksTheCommunicator) {
  Comms comms = connectAll(size(), store_, sharedMemory());
  int value = 0;
  const auto start = Clock::now();
  Status status = comms[0]->recv(&value, sizeof value, 1, 9, 200ms);
  EXPECT_EQ(status.code(), ErrorCode::kTimeout) << status.toString();
  EXPECT_NE(status.message().find("recv timed out after 200 ms on rank 0"), std::string::npos)
      << status.toString();
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_TRUE(comms[0]->isBroken());
  comms.clear();
}

TEST_P(GlooCommunicatorTest, MissingRankMakesConnectTimeOut) {
  const auto start = Clock::now();
  onEveryRank(size() - 1, [&](int r) {  // The last rank never starts.
    auto comm = createGlooCommunicator(optionsFor(r, size(), &store_, 500ms));
    ASSERT_FALSE(comm.isOk());
    EXPECT_EQ(comm.status().code(), ErrorCode::kTimeout) << comm.status().toString();
    EXPECT_NE(comm.status().message().find("500 ms"), std::string::npos)
        << comm.status().toString();
    EXPECT_NE(comm.status().message().find("did not join"), std::string::npos)
        << comm.status().toString();
  });
  EXPECT_LT(Clock::now() - start, 10s);
}

TEST_P(GlooCommunicatorTest, MissingRankMakesCollectiveTimeOut) {
  Comms comms = connectAll(size(), store_, sharedMemory());
  const int absent = size() - 1;
  std::vector<Status> results(size());
  const auto start = Clock::now();
  onEveryRank(absent, [&](int r) {  // Every rank but the last one.
    std::vector<float> data(1000, 1.0f);
    results[r] = comms[r]->allreduce(data.data(), data.size(), ReduceOp::kSum, 300ms);
  });
  EXPECT_LT(Clock::now() - start, 10s);
  int timeouts = 0;
  for (int r = 0; r < absent; ++r) {
    ASSERT_FALSE(results[r].isOk()) << "rank " << r;
    // The first rank to time out closes its connections, so its peers may see that first.
    EXPECT_TRUE(results[r].code() == ErrorCode::kTimeout || results[r].code() == ErrorCode::kIo)
        << results[r].toString();
    if (results[r].code() == ErrorCode::kTimeout) {
      ++timeouts;
      EXPECT_NE(results[r].message().find("timed out after 300 ms"), std::string::npos)
          << results[r].toString();
    }
    // Broken now: later calls fail at once with the same kind of error.
    const auto again = Clock::now();
    Status later = comms[r]->barrier(5s);
    EXPECT_EQ(later.code(), results[r].code()) << later.toString();
    EXPECT_LT(Clock::now() - again, 100ms);
    EXPECT_TRUE(comms[r]->isBroken());
  }
  EXPECT_GE(timeouts, 1);
  comms.clear();
}

TEST_P(GlooCommunicatorTest, AbortReleasesBlockedAllreducePromptly) {
  // A small buffer (bcube with more than two ranks) and a large one (ring).
  for (size_t count : {size_t{1000}, size_t{1} << 20}) {
    InMemoryStore store;
    Comms comms = connectAll(size(), store, sharedMemory());
    ASSERT_FALSE(HasFatalFailure());
    const int absent = size() - 1;  // Never joins the allreduce, so everyone else blocks.
    std::vector<Status> results(size());
    std::vector<Clock::duration> returnedAt(size());
    const auto start = Clock::now();
    std::thread aborter([&] {
      std::this_thread::sleep_for(300ms);
      for (int r = 0; r < absent; ++r) comms[r]->abort();
    });
    onEveryRank(absent, [&](int r) {
      std::vector<float> data(count, 1.0f);
      results[r] = comms[r]->allreduce(data.data(), data.size(), ReduceOp::kSum, 30s);
      returnedAt[r] = Clock::now() - start;
    });
    aborter.join();
    for (int r = 0; r < absent; ++r) {
      // In shared memory and on the TCP ring (the large buffer) a peer sees rank 0's abort at
      // once, before its own abort() comes a moment later: it fails with IO naming an aborted
      // peer, as a peer whose connection closed would. Rank 0 itself, and every rank in Gloo's
      // own collectives, says it was cancelled.
      const bool direct = sharedMemory() || count * sizeof(float) >= kGlooRingMinBytes;
      const ErrorCode expected = direct && r > 0 && results[r].code() == ErrorCode::kIo
                                     ? ErrorCode::kIo
                                     : ErrorCode::kCancelled;
      EXPECT_EQ(results[r].code(), expected) << results[r].toString();
      EXPECT_NE(results[r].message().find("aborted"), std::string::npos) << results[r].toString();
      EXPECT_LT(returnedAt[r], 3s) << "rank " << r << " stayed blocked after abort()";
      // Later calls fail fast.
      const auto again = Clock::now();
      float x = 1.0f;
      EXPECT_EQ(comms[r]->allreduce(&x, 1).code(), expected);
      EXPECT_LT(Clock::now() - again, 100ms);
    }
  }
}

TEST_P(GlooCommunicatorTest, AbortBeforeACallMakesItFailFast) {
  Comms comms = connectAll(size(), store_, sharedMemory());
  comms[0]->abort();
  comms[0]->abort();  // Twice is fine.
  EXPECT_TRUE(comms[0]->isBroken());
  const auto start = Clock::now();
  EXPECT_EQ(comms[0]->barrier().code(), ErrorCode::kCancelled);
  float x = 0;
  EXPECT_EQ(comms[0]->allreduce(&x, 1).code(), ErrorCode::kCancelled);
  EXPECT_LT(Clock::now() - start, 100ms);
  comms.clear();
}

INSTANTIATE_TEST_SUITE_P(Ranks, GlooCommunicatorTest,
                         ::testing::Combine(::testing::Values(2, 3, 4), ::testing::Bool()),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "ranks" +
                                  (std::get<1>(info.param) ? "SharedMemory" : "Tcp");
                         });

TEST(GlooCommunicator, SingleRankNeedsNoPeers) {
  InMemoryStore store;
  auto comm = createGlooCommunicator(optionsFor(0, 1, &store));
  ASSERT_TRUE(comm.isOk()) << comm.status().toString();
  std::vector<float> data = {1.0f, 2.0f, 3.0f};
  EXPECT_TRUE((*comm)->allreduce(data.data(), data.size(), ReduceOp::kAverage).isOk());
  EXPECT_EQ(data, (std::vector<float>{1.0f, 2.0f, 3.0f}));
  int value = 7, gathered = 0;
  EXPECT_TRUE((*comm)->allgather(&value, &gathered, sizeof(int)).isOk());
  EXPECT_EQ(gathered, 7);
  EXPECT_TRUE((*comm)->broadcast(&value, sizeof(value), 0).isOk());
  EXPECT_TRUE((*comm)->barrier().isOk());
}

TEST(GlooCommunicator, RejectsBadArguments) {
  InMemoryStore store;
  EXPECT_EQ(createGlooCommunicator(optionsFor(0, 2, nullptr)).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(createGlooCommunicator(optionsFor(2, 2, &store)).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(createGlooCommunicator(optionsFor(0, 0, &store)).status().code(),
            ErrorCode::kInvalidArgument);
  auto badInterface = optionsFor(0, 1, &store);
  badInterface.interface = "no-such-nic0";
  auto noNic = createGlooCommunicator(badInterface);
  EXPECT_EQ(noNic.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(noNic.status().message().find("no-such-nic0"), std::string::npos)
      << noNic.status().toString();

  Comms comms = connectAll(2, store);
  float x = 1.0f;
  EXPECT_EQ(comms[0]->allreduce(&x, 1, DataType::kBFloat16, ReduceOp::kSum).code(),
            ErrorCode::kUnimplemented);
  EXPECT_EQ(comms[0]->broadcast(&x, sizeof(x), 2).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(comms[0]->broadcast(&x, sizeof(x), -1).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(comms[0]->allreduce(&x, 1, ReduceOp::kSum, 0ms).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(comms[0]->allreduce(static_cast<float*>(nullptr), 4).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(comms[0]->send(&x, sizeof x, 0, 1).code(), ErrorCode::kInvalidArgument);  // itself
  EXPECT_EQ(comms[0]->recv(&x, sizeof x, 2, 1).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(comms[0]->send(nullptr, 4, 1, 1).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(comms[0]->recvFromAny(&x, sizeof x, {}, 1).status().code(),
            ErrorCode::kInvalidArgument);
  const int badPeers[] = {1, 5};
  auto bad = comms[0]->recvFromAny(&x, sizeof x, badPeers, 1);
  EXPECT_NE(bad.status().message().find("peer 5 is not another rank of 0..1"), std::string::npos)
      << bad.status().toString();
  // None of that broke the communicator.
  EXPECT_FALSE(comms[0]->isBroken());
  finish(comms);
}

TEST(GlooCommunicator, StorePrefixesKeepCommunicatorsApart) {
  // Two groups rendezvous on one store at once; different prefixes keep their keys apart.
  InMemoryStore store;
  Comms a(2), b(2);
  onEveryRank(4, [&](int t) {
    auto options = optionsFor(t % 2, 2, &store);
    options.storePrefix = t < 2 ? "job/a/" : "job/b/";
    auto comm = createGlooCommunicator(options);
    ASSERT_TRUE(comm.isOk()) << comm.status().toString();
    (t < 2 ? a : b)[t % 2] = std::move(*comm);
  });
  onEveryRank(4, [&](int t) {
    Comms& group = t < 2 ? a : b;
    float value = t < 2 ? 1.0f : 10.0f;
    ASSERT_TRUE(group[t % 2]->allreduce(&value, 1).isOk());
    EXPECT_EQ(value, t < 2 ? 2.0f : 20.0f);
  });
  finish(a);
  finish(b);
}

}  // namespace
}  // namespace ringmaster::comm

#include "comm/tcp/tcp_ring.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "comm/shm/sum_kernels.h"
#include "ringmaster/util/half.h"

namespace ringmaster::comm::tcp {
namespace {

using Clock = TcpRing::Clock;

// Received data is summed in pieces of this size as it arrives (it is still in the cache), and
// one send(2) hands the kernel at most kSendBytes, so that receiving keeps pace with sending.
constexpr size_t kPieceBytes = 64 << 10;
constexpr size_t kSendBytes = 512 << 10;
// How long one poll(2) waits at most: how soon an abort flag set without shutdown() is seen.
constexpr int kPollSliceMs = 100;
// How long an accepted connection may take to introduce itself before it is dropped.
constexpr auto kHelloTimeout = std::chrono::seconds(2);

constexpr char kMagic[8] = {'R', 'M', 'R', 'I', 'N', 'G', '0', '1'};
constexpr size_t kTokenChars = 32;
constexpr size_t kHelloBytes = sizeof(kMagic) + 4 + kTokenChars;

Status socketError(const std::string& what) { return ioError(what + ": " + std::strerror(errno)); }

int pollMs(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, kPollSliceMs));
}

// Waits until `fd` is ready for `events` or the deadline passes (false).
bool waitFor(int fd, short events, Clock::time_point deadline) {
  while (Clock::now() < deadline) {
    pollfd p{fd, events, 0};
    if (::poll(&p, 1, pollMs(deadline)) > 0) return true;
  }
  return false;
}

class Descriptor {
 public:
  explicit Descriptor(int fd = -1) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

Status sendAll(int fd, const char* data, size_t bytes, Clock::time_point deadline) {
  size_t sent = 0;
  while (sent < bytes) {
    const ssize_t k = ::send(fd, data + sent, bytes - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k > 0) {
      sent += static_cast<size_t>(k);
    } else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return socketError("send");
    } else if (!waitFor(fd, POLLOUT, deadline)) {
      return timeoutError("sending timed out");
    }
  }
  return Status::ok();
}

// Reads exactly `bytes`; false on end of stream, error or deadline.
bool receiveAll(int fd, char* data, size_t bytes, Clock::time_point deadline) {
  size_t got = 0;
  while (got < bytes) {
    const ssize_t k = ::recv(fd, data + got, bytes - got, MSG_DONTWAIT);
    if (k > 0) {
      got += static_cast<size_t>(k);
    } else if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      return false;
    } else if (!waitFor(fd, POLLIN, deadline)) {
      return false;
    }
  }
  return true;
}

Result<std::string> randomToken() {
  unsigned char bytes[kTokenChars / 2];
  if (::getrandom(bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes))) {
    return socketError("getrandom");
  }
  std::string token;
  char hex[3];
  for (unsigned char b : bytes) {
    std::snprintf(hex, sizeof(hex), "%02x", b);
    token += hex;
  }
  return token;
}

bool sameToken(const char* a, const std::string& b) {
  unsigned char differ = 0;  // constant time: no early exit on the first wrong character
  for (size_t i = 0; i < kTokenChars; ++i) differ |= static_cast<unsigned char>(a[i] ^ b[i]);
  return differ == 0;
}

// "FAMILY PORT ADDRESS TOKEN", the record a rank publishes.
struct Published {
  sockaddr_storage address{};
  socklen_t length = 0;
  std::string token;
};

Result<std::string> describe(const sockaddr_storage& address, const std::string& token) {
  char host[INET6_ADDRSTRLEN] = {};
  int port = 0;
  if (address.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &in.sin_addr, host, sizeof(host));
    port = ntohs(in.sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, host, sizeof(host));
    port = ntohs(in6.sin6_port);
  } else {
    return invalidArgument("address family " + std::to_string(address.ss_family) +
                           " is neither IPv4 nor IPv6");
  }
  return std::to_string(address.ss_family) + " " + std::to_string(port) + " " + host + " " + token;
}

Result<Published> parse(const std::string& record) {
  int family = 0, port = 0;
  char host[INET6_ADDRSTRLEN + 1] = {};
  char token[kTokenChars + 1] = {};
  Published out;
  const bool read =
      std::sscanf(record.c_str(), "%d %d %46s %32s", &family, &port, host, token) == 4 &&
      std::strlen(token) == kTokenChars && port > 0 && port < 65536;
  if (read && family == AF_INET) {
    auto& in = reinterpret_cast<sockaddr_in&>(out.address);
    in.sin_family = AF_INET;
    in.sin_port = htons(static_cast<uint16_t>(port));
    out.length = sizeof(sockaddr_in);
    if (::inet_pton(AF_INET, host, &in.sin_addr) == 1) out.token = token;
  } else if (read && family == AF_INET6) {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(out.address);
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(static_cast<uint16_t>(port));
    out.length = sizeof(sockaddr_in6);
    if (::inet_pton(AF_INET6, host, &in6.sin6_addr) == 1) out.token = token;
  }
  if (out.token.empty()) return invalidArgument("cannot parse '" + record + "'");
  return out;
}

Result<int> listenOn(sockaddr_storage address) {
  socklen_t length = sizeof(sockaddr_in);
  if (address.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in&>(address).sin_port = 0;
  } else {
    reinterpret_cast<sockaddr_in6&>(address).sin6_port = 0;
    length = sizeof(sockaddr_in6);
  }
  Descriptor fd(::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return socketError("socket");
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    return socketError("bind");
  }
  if (::listen(fd.get(), 16) != 0) return socketError("listen");
  return fd.release();
}

Result<int> connectTo(const Published& peer, Clock::time_point deadline) {
  Descriptor fd(::socket(peer.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return socketError("socket");
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&peer.address), peer.length) != 0) {
    if (errno != EINPROGRESS) return socketError("connect");
    if (!waitFor(fd.get(), POLLOUT, deadline)) return timeoutError("connect timed out");
    int error = 0;
    socklen_t length = sizeof(error);
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
      errno = error;
      return socketError("connect");
    }
  }
  return fd.release();
}

// Accepts connections until one introduces itself as rank `prev` with `token`; others are
// dropped (a port scanner, a stale attempt).
Result<int> acceptRank(int listener, int prev, const std::string& token,
                       Clock::time_point deadline) {
  while (waitFor(listener, POLLIN, deadline)) {
    Descriptor fd(::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (fd.get() < 0) continue;
    char hello[kHelloBytes];
    const auto hello_deadline = std::min(deadline, Clock::now() + kHelloTimeout);
    if (!receiveAll(fd.get(), hello, sizeof(hello), hello_deadline)) continue;
    uint32_t rank = 0;
    std::memcpy(&rank, hello + sizeof(kMagic), sizeof(rank));
    if (std::memcmp(hello, kMagic, sizeof(kMagic)) == 0 &&
        ntohl(rank) == static_cast<uint32_t>(prev) &&
        sameToken(hello + sizeof(kMagic) + sizeof(rank), token)) {
      return fd.release();
    }
  }
  return timeoutError("rank " + std::to_string(prev) + " did not connect in time");
}

void noDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

Result<std::unique_ptr<TcpRing>> TcpRing::create(int rank, int size,
                                                 const sockaddr_storage& address,
                                                 KeyValueStore& store,
                                                 const std::string& key_prefix,
                                                 Clock::time_point deadline) {
  if (size < 2 || rank < 0 || rank >= size) {
    return invalidArgument("rank " + std::to_string(rank) + " of " + std::to_string(size) +
                           " (needs 2 ranks or more)");
  }
  const int next = (rank + 1) % size;
  const int prev = (rank + size - 1) % size;
  const auto key = [&](int r) { return key_prefix + "ring/" + std::to_string(r); };
  const auto left = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  };

  RM_ASSIGN_OR_RETURN(const int listening, listenOn(address));
  Descriptor listener(listening);
  sockaddr_storage bound{};
  socklen_t bound_length = sizeof(bound);
  if (::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&bound), &bound_length) != 0) {
    return socketError("getsockname");
  }
  RM_ASSIGN_OR_RETURN(const std::string token, randomToken());
  RM_ASSIGN_OR_RETURN(const std::string mine, describe(bound, token));
  RM_RETURN_IF_ERROR(store.set(key(rank), mine));

  RM_ASSIGN_OR_RETURN(const std::string record, store.get(key(next), left()));
  RM_ASSIGN_OR_RETURN(const Published peer, parse(record));
  RM_ASSIGN_OR_RETURN(const int connected, connectTo(peer, deadline));
  Descriptor to_next(connected);
  char hello[kHelloBytes];
  const uint32_t rank_be = htonl(static_cast<uint32_t>(rank));
  std::memcpy(hello, kMagic, sizeof(kMagic));
  std::memcpy(hello + sizeof(kMagic), &rank_be, sizeof(rank_be));
  std::memcpy(hello + sizeof(kMagic) + sizeof(rank_be), peer.token.data(), kTokenChars);
  RM_RETURN_IF_ERROR(sendAll(to_next.get(), hello, sizeof(hello), deadline));

  RM_ASSIGN_OR_RETURN(const int accepted, acceptRank(listener.get(), prev, token, deadline));
  Descriptor from_prev(accepted);
  noDelay(to_next.get());
  noDelay(from_prev.get());
  return std::unique_ptr<TcpRing>(new TcpRing(rank, size, to_next.release(), from_prev.release()));
}

TcpRing::TcpRing(int rank, int size, int to_next, int from_prev)
    : rank_(rank), size_(size), to_next_(to_next), from_prev_(from_prev) {}

TcpRing::~TcpRing() {
  ::close(to_next_);
  ::close(from_prev_);
}

void TcpRing::shutdown() {
  if (shut_.exchange(true)) return;
  ::shutdown(to_next_, SHUT_RDWR);
  ::shutdown(from_prev_, SHUT_RDWR);
}

template <typename Received>
Status TcpRing::exchange(const char* send, size_t send_bytes, char* recv, size_t recv_bytes,
                         Received&& received, Clock::time_point deadline,
                         const std::atomic<bool>& aborted) {
  const int next = (rank_ + 1) % size_;
  const int prev = (rank_ + size_ - 1) % size_;
  size_t sent = 0, got = 0, reported = 0;
  while (sent < send_bytes || got < recv_bytes) {
    if (aborted.load(std::memory_order_relaxed) || shut_.load(std::memory_order_relaxed)) {
      return Status(ErrorCode::kCancelled, "aborted");
    }
    // Checked while data moves too: a peer that trickles bytes does not hold this rank forever.
    if (Clock::now() >= deadline) return timeoutError("the deadline passed");
    bool moved = false;
    if (sent < send_bytes) {
      const ssize_t k = ::send(to_next_, send + sent, std::min(send_bytes - sent, kSendBytes),
                               MSG_DONTWAIT | MSG_NOSIGNAL);
      if (k > 0) {
        sent += static_cast<size_t>(k);
        moved = true;
      } else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return socketError("sending to rank " + std::to_string(next));
      }
    }
    if (got < recv_bytes) {
      const ssize_t k = ::recv(from_prev_, recv + got, recv_bytes - got, MSG_DONTWAIT);
      if (k > 0) {
        got += static_cast<size_t>(k);
        moved = true;
        if (got - reported >= kPieceBytes || got == recv_bytes) {
          received(got);
          reported = got;
        }
      } else if (k == 0) {
        return ioError("rank " + std::to_string(prev) +
                       " closed its connection (it failed, exited or was aborted)");
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return socketError("receiving from rank " + std::to_string(prev));
      }
    }
    if (moved) continue;
    pollfd fds[2];
    nfds_t count = 0;
    if (sent < send_bytes) fds[count++] = pollfd{to_next_, POLLOUT, 0};
    if (got < recv_bytes) fds[count++] = pollfd{from_prev_, POLLIN, 0};
    ::poll(fds, count, pollMs(deadline));
  }
  return Status::ok();
}

Status TcpRing::allreduce(float* data, size_t count, float scale, Clock::time_point deadline,
                          const std::atomic<bool>& aborted) {
  // Each part of a chunk as it arrives: target += incoming, scaled in the same pass on the last
  // step (the scale is exact when 1).
  const auto add = [](float* target, const float* incoming, size_t n, float factor) {
    const float* inputs[2] = {target, incoming};
    shm::sumScaled(target, nullptr, inputs, 2, n, factor);
  };
  return ring(data, count, scale, add, deadline, aborted);
}

Status TcpRing::allreduceHalf(uint16_t* data, size_t count, float scale, Clock::time_point deadline,
                              const std::atomic<bool>& aborted) {
  // Rounded to half after each addition and after the scale, as Gloo's float16 ring does.
  const auto add = [](uint16_t* target, const uint16_t* incoming, size_t n, float factor) {
    sumHalves(target, target, incoming, n);
    if (factor != 1.0f) scaleHalves(target, n, factor);
  };
  return ring(data, count, scale, add, deadline, aborted);
}

template <typename T, typename Add>
Status TcpRing::ring(T* data, size_t count, float scale, Add&& add, Clock::time_point deadline,
                     const std::atomic<bool>& aborted) {
  // Every rank must pass the same count, or the streams would be read out of step: each rank
  // checks its previous one's.
  const uint64_t mine = count;
  uint64_t theirs = 0;
  RM_RETURN_IF_ERROR(exchange(
      reinterpret_cast<const char*>(&mine), sizeof(mine), reinterpret_cast<char*>(&theirs),
      sizeof(theirs), [](size_t) {}, deadline, aborted));
  if (theirs != mine) {
    return invalidArgument("rank " + std::to_string((rank_ + size_ - 1) % size_) + " passed " +
                           std::to_string(theirs) + " elements and this rank " +
                           std::to_string(mine) + " (every rank must pass the same count)");
  }
  if (count == 0) return Status::ok();
  const auto n = static_cast<size_t>(size_);
  const auto wrap = [&](int chunk) { return static_cast<size_t>((chunk % size_ + size_) % size_); };
  const auto begin = [&](size_t chunk) { return count * chunk / n; };
  const auto elements = [&](size_t chunk) { return begin(chunk + 1) - begin(chunk); };
  const auto bytes = [](size_t elements) { return elements * sizeof(T); };
  incoming_.resize(bytes(count / n + 1));
  T* const incoming = reinterpret_cast<T*>(incoming_.data());

  // Reduce-scatter: in step s this rank sends chunk rank-s (its sum so far) to the next rank and
  // adds chunk rank-s-1 from the previous one; after the last step it holds the whole sum of
  // chunk rank+1 and scales it.
  for (int step = 0; step < size_ - 1; ++step) {
    const size_t out = wrap(rank_ - step);
    const size_t in = wrap(rank_ - step - 1);
    T* const target = data + begin(in);
    const float factor = step == size_ - 2 ? scale : 1.0f;
    size_t summed = 0;
    const auto received = [&](size_t received_bytes) {
      const size_t upto = received_bytes / sizeof(T);
      add(target + summed, incoming + summed, upto - summed, factor);
      summed = upto;
    };
    RM_RETURN_IF_ERROR(exchange(reinterpret_cast<const char*>(data + begin(out)),
                                bytes(elements(out)), reinterpret_cast<char*>(incoming),
                                bytes(elements(in)), received, deadline, aborted));
  }
  // Allgather: in step s this rank passes on chunk rank+1-s and receives chunk rank-s in place.
  for (int step = 0; step < size_ - 1; ++step) {
    const size_t out = wrap(rank_ + 1 - step);
    const size_t in = wrap(rank_ - step);
    RM_RETURN_IF_ERROR(exchange(
        reinterpret_cast<const char*>(data + begin(out)), bytes(elements(out)),
        reinterpret_cast<char*>(data + begin(in)), bytes(elements(in)), [](size_t) {}, deadline,
        aborted));
  }
  return Status::ok();
}

}  // namespace ringmaster::comm::tcp

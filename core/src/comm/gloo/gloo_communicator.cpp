#include "comm/gloo/gloo_communicator.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/math.h>
#include <gloo/transport/tcp/device.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include "comm/gloo/gloo_store.h"
#include "comm/gloo/host_identity.h"
#include "ringmaster/util/half.h"

namespace ringmaster::comm {
namespace gloo {

namespace {

using Clock = std::chrono::steady_clock;

std::string ms(std::chrono::milliseconds t) { return std::to_string(t.count()) + " ms"; }

// Slots of point-to-point messages: a prefix of their own, beyond Gloo's collectives' (0x01..0x08),
// so a caller's tags never meet a collective's.
constexpr uint8_t kPointToPointSlotPrefix = 0x40;

bool mentionsTimeout(const std::string& message) {
  return message.find("Timed out") != std::string::npos ||
         message.find("timeout") != std::string::npos;
}

// Gloo writes with writev(2), which raises SIGPIPE when a peer has gone away; at its default
// action that signal kills the process instead of letting Gloo report an error. Python (and so
// torch.distributed) ignores SIGPIPE for the same reason.
void ignoreSigpipeIfDefault() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    signal(SIGPIPE, SIG_IGN);
  }
}

void sumFloat(void* c, const void* a, const void* b, size_t n) { ::gloo::sum<float>(c, a, b, n); }
// Gloo's float16 sum (each pair added in float, rounded to nearest even), eight at a time.
void sumHalf(void* c, const void* a, const void* b, size_t n) {
  sumHalves(static_cast<uint16_t*>(c), static_cast<const uint16_t*>(a),
            static_cast<const uint16_t*>(b), n);
}

// Whether `name` is a network interface with an IPv4 or IPv6 address. Checked before Gloo looks
// the interface up, because this Gloo version leaks its getifaddrs(3) list when the lookup fails.
bool interfaceHasAddress(const std::string& name) {
  struct ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (struct ifaddrs* it = list; it != nullptr && !found; it = it->ifa_next) {
    found = it->ifa_addr != nullptr && name == it->ifa_name &&
            (it->ifa_addr->sa_family == AF_INET || it->ifa_addr->sa_family == AF_INET6);
  }
  freeifaddrs(list);
  return found;
}

}  // namespace

GlooCommunicator::InflightGuard::InflightGuard(GlooCommunicator& comm,
                                               ::gloo::transport::UnboundBuffer* buffer)
    : comm_(comm), buffer_(buffer) {
  std::lock_guard lock(comm_.mutex_);
  comm_.inflight_.push_back(buffer_);
}

GlooCommunicator::InflightGuard::~InflightGuard() {
  std::lock_guard lock(comm_.mutex_);
  std::erase(comm_.inflight_, buffer_);
}

GlooCommunicator::GlooCommunicator(std::shared_ptr<::gloo::rendezvous::Context> context,
                                   const GlooOptions& options)
    : context_(std::move(context)),
      rank_(options.rank),
      size_(options.size),
      defaultTimeout_(options.timeout),
      algorithm_(options.allreduceAlgorithm),
      watchdogSleepsUntil_(Clock::time_point::max()),
      watchdog_([this] { watchdogLoop(); }) {}

GlooCommunicator::~GlooCommunicator() {
  {
    std::lock_guard lock(watchdogMutex_);
    watchdogStop_ = true;
  }
  watchdogWake_.notify_one();
  watchdog_.join();
}

void GlooCommunicator::armWatchdog(Clock::time_point deadline) {
  bool wake = false;
  {
    std::lock_guard lock(watchdogMutex_);
    deadline_ = deadline;
    watchdogFired_ = false;
    wake = deadline < watchdogSleepsUntil_;
  }
  // Usually the watchdog already sleeps until an earlier deadline and finds this one when it
  // wakes up: no wake-up (and no context switch) per call.
  if (wake) watchdogWake_.notify_one();
}

std::string GlooCommunicator::transport() const {
  if (shm_) return "gloo; allreduce in shared memory, the ranks being on one host";
  if (ringCarries(0)) return "gloo; allreduce over Ringmaster's TCP ring";
  if (ringCarries(kGlooRingMinBytes)) {
    return "gloo; allreduce over Ringmaster's TCP ring from 2 MB, Gloo's below";
  }
  return "gloo; allreduce over Gloo's TCP";
}

bool GlooCommunicator::disarmWatchdog() {
  std::lock_guard lock(watchdogMutex_);
  deadline_.reset();
  return watchdogFired_;
}

void GlooCommunicator::watchdogLoop() {
  std::unique_lock lock(watchdogMutex_);
  while (!watchdogStop_) {
    const auto now = Clock::now();
    if (deadline_ && *deadline_ <= now) {
      deadline_.reset();
      watchdogFired_ = true;
      lock.unlock();
      closeConnections();
      lock.lock();
      continue;
    }
    // With no call in flight, keep the previous wake-up time if it is still ahead: the next
    // call's deadline will be later, so arming it needs no wake-up.
    if (deadline_) {
      watchdogSleepsUntil_ = *deadline_;
    } else if (watchdogSleepsUntil_ <= now) {
      watchdogSleepsUntil_ = Clock::time_point::max();
    }
    const auto until = watchdogSleepsUntil_;
    auto wakeEarly = [&] { return watchdogStop_ || (deadline_ && *deadline_ < until); };
    if (until == Clock::time_point::max()) {
      watchdogWake_.wait(lock, wakeEarly);
    } else {
      watchdogWake_.wait_until(lock, until, wakeEarly);
    }
  }
}

Status GlooCommunicator::brokenStatus() const {
  std::lock_guard lock(mutex_);
  if (firstError_.isOk()) return ioError("communicator is broken: its connections were closed");
  if (firstError_.code() == ErrorCode::kCancelled) return firstError_;
  return Status(firstError_.code(),
                "communicator unusable after an earlier failure: " + firstError_.message());
}

// An abort() from another thread while this call was failing recorded its cause first: the call
// says that cause, as every later call will (a peer's failure seen a moment before this rank's
// own abort() must not read kIo now and kCancelled ever after).
Status GlooCommunicator::fail(Status status) {
  std::lock_guard lock(mutex_);
  if (firstError_.isOk()) firstError_ = status;
  broken_ = true;
  return firstError_.code() == ErrorCode::kCancelled ? firstError_ : status;
}

template <typename Body>
Status GlooCommunicator::run(const char* what, std::chrono::milliseconds timeout, Body&& body) {
  if (broken_) return brokenStatus();
  if (timeout == kDefaultTimeout) timeout = defaultTimeout_;
  if (timeout.count() <= 0) {
    return invalidArgument(std::string(what) + ": timeout must be positive, got " + ms(timeout));
  }
  const auto start = Clock::now();
  std::string error;
  armWatchdog(start + timeout);
  try {
    body(timeout);
  } catch (const ::gloo::IoException& e) {
    error = e.what();
  } catch (const ::gloo::EnforceNotMet& e) {
    error = e.what();
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown exception";
  }
  const bool expired = disarmWatchdog();
  if (error.empty() && !expired && !aborted_) return Status::ok();
  const std::string where = " on rank " + std::to_string(rank_) + " of " + std::to_string(size_);
  if (aborted_) {
    return fail(Status(ErrorCode::kCancelled, std::string(what) + " cancelled" + where +
                                                  ": the communicator was aborted"));
  }
  if (expired) {
    return fail(timeoutError(std::string(what) + " timed out after " + ms(timeout) + where +
                             " (a peer did not take part in time)"));
  }
  if (mentionsTimeout(error)) {
    // Gloo's own deadline beat the watchdog: the same words, with Gloo's detail.
    return fail(timeoutError(std::string(what) + " timed out after " + ms(timeout) + where +
                             " (a peer did not take part in time); gloo: " + error));
  }
  return fail(ioError(std::string(what) + " failed" + where +
                      " (a peer failed, aborted or closed its connection); gloo: " + error));
}

Status GlooCommunicator::allreduce(void* data, size_t count, DataType type, ReduceOp op,
                                   std::chrono::milliseconds timeout) {
  if (type != DataType::kFloat32 && type != DataType::kFloat16) {
    return Status(
        ErrorCode::kUnimplemented,
        std::string("gloo allreduce supports float32 and float16 only, got ") + dataTypeName(type));
  }
  const bool half = type == DataType::kFloat16;
  if (data == nullptr && count > 0) return invalidArgument("allreduce: data is null");
  // The average's scale goes into the sums on the transports of this class's own (the shared
  // memory group, the TCP ring: the same calls), and into a pass after Gloo's.
  const float scale = op == ReduceOp::kAverage ? 1.0f / static_cast<float>(size_) : 1.0f;
  const auto direct = [&](const char* transport, auto& group) {
    return runDirect("allreduce", transport, timeout, [&](Clock::time_point deadline) {
      if (half) {
        return group.allreduceHalf(static_cast<uint16_t*>(data), count, scale, deadline, aborted_);
      }
      return group.allreduce(static_cast<float*>(data), count, scale, deadline, aborted_);
    });
  };
  if (shm_ && count > 0) return direct("shared memory", *shm_);
  const size_t bytes = count * dataTypeSize(type);
  if (ringCarries(bytes)) return direct("tcp ring", *ring_);
  const bool useBcube =
      algorithm_ == GlooOptions::Algorithm::kBcube ||
      (algorithm_ == GlooOptions::Algorithm::kAuto && size_ > 2 && bytes < kGlooRingMinBytes);
  Status status = run("allreduce", timeout, [&](std::chrono::milliseconds t) {
    const uint32_t tag = nextTag();
    if (count == 0 || size_ == 1) return;
    ::gloo::AllreduceOptions opts(context_);
    auto buffer = context_->createUnboundBuffer(data, bytes);
    InflightGuard guard(*this, buffer.get());
    if (half) {
      opts.setOutput<::gloo::float16>(std::move(buffer));
      opts.setReduceFunction(&sumHalf);
    } else {
      opts.setOutput<float>(std::move(buffer));
      opts.setReduceFunction(&sumFloat);
    }
    opts.setAlgorithm(useBcube ? ::gloo::AllreduceOptions::Algorithm::BCUBE
                               : ::gloo::AllreduceOptions::Algorithm::RING);
    opts.setTag(tag);
    opts.setTimeout(t);
    ::gloo::allreduce(opts);
  });
  if (!status.isOk() || op != ReduceOp::kAverage || size_ == 1) return status;
  if (half) {
    scaleHalves(static_cast<uint16_t*>(data), count, scale);
    return status;
  }
  float* values = static_cast<float*>(data);
  for (size_t i = 0; i < count; ++i) values[i] *= scale;
  return status;
}

template <typename Body>
Status GlooCommunicator::runDirect(const char* what, const char* transport,
                                   std::chrono::milliseconds timeout, Body&& body) {
  if (broken_) return brokenStatus();
  if (timeout == kDefaultTimeout) timeout = defaultTimeout_;
  if (timeout.count() <= 0) {
    return invalidArgument(std::string(what) + ": timeout must be positive, got " + ms(timeout));
  }
  Status status = body(Clock::now() + timeout);
  if (status.isOk()) return status;
  // The same words as over Gloo (run()); closing marks the segment broken and shuts the ring's
  // connections, so the peers stop waiting at once.
  const std::string where = " on rank " + std::to_string(rank_) + " of " + std::to_string(size_);
  closeConnections();
  if (aborted_ || status.code() == ErrorCode::kCancelled) {
    return fail(Status(ErrorCode::kCancelled, std::string(what) + " cancelled" + where +
                                                  ": the communicator was aborted"));
  }
  if (status.code() == ErrorCode::kTimeout) {
    return fail(timeoutError(std::string(what) + " timed out after " + ms(timeout) + where +
                             " (a peer did not take part in time)"));
  }
  return fail(ioError(std::string(what) + " failed" + where +
                      " (a peer failed, aborted or closed its connection); " + transport + ": " +
                      status.message()));
}

Status GlooCommunicator::setUpSharedMemory() {
  if (size_ == 1) return Status::ok();
  std::string mine = hostIdentity();
  mine.resize(kHostIdentityBytes, '\0');
  std::vector<char> all(kHostIdentityBytes * static_cast<size_t>(size_));
  RM_RETURN_IF_ERROR(allgather(mine.data(), all.data(), kHostIdentityBytes, defaultTimeout_));
  for (int r = 0; r < size_; ++r) {  // every rank sees the same table: they all decide alike
    if (std::memcmp(all.data() + kHostIdentityBytes * static_cast<size_t>(r), mine.data(),
                    kHostIdentityBytes) != 0) {
      return Status::ok();  // not all on this host: TCP between them
    }
  }
  const auto share_name = [this](std::string* name) {
    std::array<char, 256> buffer{};
    std::memcpy(buffer.data(), name->data(), std::min(name->size(), buffer.size() - 1));
    RM_RETURN_IF_ERROR(broadcast(buffer.data(), buffer.size(), 0, defaultTimeout_));
    *name = std::string(buffer.data());
    return Status::ok();
  };
  const auto agree = [this](bool ok_here) -> Result<bool> {
    float failed = ok_here ? 0.0f : 1.0f;  // over TCP: shm_ is not set yet
    RM_RETURN_IF_ERROR(allreduce(&failed, 1, ReduceOp::kSum, defaultTimeout_));
    return failed == 0.0f;
  };
  auto group = shm::ShmGroup::create(rank_, size_, share_name, agree);
  if (group.isOk()) {
    shm_ = std::move(*group);
  } else if (group.status().code() != ErrorCode::kUnavailable) {
    return group.status();  // the exchange itself failed: the communicator is broken
  }
  return Status::ok();
}

Status GlooCommunicator::setUpTcpRing(const sockaddr_storage& address, KeyValueStore& store,
                                      const std::string& key_prefix) {
  if (size_ == 1) return Status::ok();
  RM_ASSIGN_OR_RETURN(ring_, tcp::TcpRing::create(rank_, size_, address, store, key_prefix,
                                                  Clock::now() + defaultTimeout_));
  return Status::ok();
}

Status GlooCommunicator::broadcast(void* data, size_t bytes, int root,
                                   std::chrono::milliseconds timeout) {
  if (root < 0 || root >= size_) {
    return invalidArgument("broadcast: root " + std::to_string(root) + " is not a rank of 0.." +
                           std::to_string(size_ - 1));
  }
  if (data == nullptr && bytes > 0) return invalidArgument("broadcast: data is null");
  return run("broadcast", timeout, [&](std::chrono::milliseconds t) {
    const uint32_t tag = nextTag();
    if (bytes == 0 || size_ == 1) return;
    ::gloo::BroadcastOptions opts(context_);
    auto buffer = context_->createUnboundBuffer(data, bytes);
    InflightGuard guard(*this, buffer.get());
    opts.setOutput<char>(std::move(buffer));
    opts.setRoot(root);
    opts.setTag(tag);
    opts.setTimeout(t);
    ::gloo::broadcast(opts);
  });
}

Status GlooCommunicator::allgather(const void* send, void* recv, size_t bytesPerRank,
                                   std::chrono::milliseconds timeout) {
  if ((send == nullptr || recv == nullptr) && bytesPerRank > 0) {
    return invalidArgument("allgather: send or recv is null");
  }
  if (shm_ && bytesPerRank > 0) {
    return runDirect("allgather", "shared memory", timeout, [&](Clock::time_point deadline) {
      return shm_->allgather(send, recv, bytesPerRank, deadline, aborted_);
    });
  }
  return run("allgather", timeout, [&](std::chrono::milliseconds t) {
    const uint32_t tag = nextTag();
    if (bytesPerRank == 0) return;
    // In place: our contribution goes to its slot first (memmove: `send` may alias it).
    char* slot = static_cast<char*>(recv) + static_cast<size_t>(rank_) * bytesPerRank;
    if (slot != send) std::memmove(slot, send, bytesPerRank);
    if (size_ == 1) return;
    ::gloo::AllgatherOptions opts(context_);
    auto buffer = context_->createUnboundBuffer(recv, bytesPerRank * static_cast<size_t>(size_));
    InflightGuard guard(*this, buffer.get());
    opts.setOutput<char>(std::move(buffer));
    opts.setTag(tag);
    opts.setTimeout(t);
    ::gloo::allgather(opts);
  });
}

Status GlooCommunicator::checkPeer(const char* what, int peer, const void* data,
                                   size_t bytes) const {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    return invalidArgument(std::string(what) + ": peer " + std::to_string(peer) +
                           " is not another rank of 0.." + std::to_string(size_ - 1) +
                           " (this is rank " + std::to_string(rank_) + ")");
  }
  if (data == nullptr && bytes > 0) return invalidArgument(std::string(what) + ": data is null");
  return Status::ok();
}

Status GlooCommunicator::send(const void* data, size_t bytes, int peer, uint32_t tag,
                              std::chrono::milliseconds timeout) {
  RM_RETURN_IF_ERROR(checkPeer("send", peer, data, bytes));
  if (shm_) {
    return runDirect("send", "shared memory", timeout, [&](Clock::time_point deadline) {
      return shm_->send(data, bytes, peer, tag, deadline, aborted_);
    });
  }
  return run("send", timeout, [&](std::chrono::milliseconds t) {
    // Gloo's buffers are not const; a send only reads this one.
    auto buffer = context_->createUnboundBuffer(const_cast<void*>(data), bytes);
    InflightGuard guard(*this, buffer.get());
    buffer->send(peer, ::gloo::Slot::build(kPointToPointSlotPrefix, tag));
    if (!buffer->waitSend(t)) throw std::runtime_error("the send was aborted");
  });
}

Status GlooCommunicator::recv(void* data, size_t bytes, int peer, uint32_t tag,
                              std::chrono::milliseconds timeout) {
  RM_RETURN_IF_ERROR(checkPeer("recv", peer, data, bytes));
  if (shm_) {
    return runDirect("recv", "shared memory", timeout, [&](Clock::time_point deadline) {
      return shm_->recv(data, bytes, peer, tag, deadline, aborted_);
    });
  }
  return run("recv", timeout, [&](std::chrono::milliseconds t) {
    auto buffer = context_->createUnboundBuffer(data, bytes);
    InflightGuard guard(*this, buffer.get());
    buffer->recv(peer, ::gloo::Slot::build(kPointToPointSlotPrefix, tag));
    if (!buffer->waitRecv(t)) throw std::runtime_error("the recv was aborted");
  });
}

Result<int> GlooCommunicator::recvFromAny(void* data, size_t bytes, std::span<const int> peers,
                                          uint32_t tag, std::chrono::milliseconds timeout) {
  if (peers.empty()) return invalidArgument("recvFromAny: no peers given");
  for (int peer : peers) RM_RETURN_IF_ERROR(checkPeer("recvFromAny", peer, data, bytes));
  int from = -1;
  if (shm_) {
    Status received =
        runDirect("recvFromAny", "shared memory", timeout, [&](Clock::time_point deadline) {
          Result<int> sender = shm_->recvFromAny(data, bytes, peers, tag, deadline, aborted_);
          if (sender.isOk()) from = *sender;
          return sender.status();
        });
    if (!received.isOk()) return received;
    return from;
  }
  Status received = run("recvFromAny", timeout, [&](std::chrono::milliseconds t) {
    auto buffer = context_->createUnboundBuffer(data, bytes);
    InflightGuard guard(*this, buffer.get());
    buffer->recv(std::vector<int>(peers.begin(), peers.end()),
                 ::gloo::Slot::build(kPointToPointSlotPrefix, tag));
    if (!buffer->waitRecv(&from, t)) throw std::runtime_error("the recv was aborted");
  });
  if (!received.isOk()) return received;
  return from;
}

Status GlooCommunicator::barrier(std::chrono::milliseconds timeout) {
  if (shm_)
    return runDirect("barrier", "shared memory", timeout,
                     [&](Clock::time_point deadline) { return shm_->barrier(deadline, aborted_); });
  return run("barrier", timeout, [&](std::chrono::milliseconds t) {
    const uint32_t tag = nextTag();
    if (size_ == 1) return;
    ::gloo::BarrierOptions opts(context_);
    opts.setTag(tag);
    opts.setTimeout(t);
    ::gloo::barrier(opts);
  });
}

void GlooCommunicator::abort() {
  aborted_ = true;
  {
    std::lock_guard lock(mutex_);
    if (firstError_.isOk()) {
      firstError_ =
          Status(ErrorCode::kCancelled, "communicator was aborted on rank " +
                                            std::to_string(rank_) + " of " + std::to_string(size_));
    }
    broken_ = true;
  }
  closeConnections();
}

void GlooCommunicator::closeConnections() {
  if (shm_) shm_->markBroken();  // peers waiting in shared memory stop too
  if (ring_) ring_->shutdown();  // and the ring's neighbours see their streams end
  std::lock_guard lock(mutex_);
  broken_ = true;
  if (!connectionsClosed_ && size_ > 1) {
    connectionsClosed_ = true;
    // Gloo has no public "abort" in this version. What it does have: when a wait on an unbound
    // buffer times out, the transport context signals an error to every pair, which wakes every
    // pending operation of this context with an exception and closes the connections. A wait of
    // 1 ms on an empty buffer with nothing posted triggers exactly that path.
    try {
      auto trigger = context_->createUnboundBuffer(nullptr, 0);
      trigger->waitRecv(nullptr, std::chrono::milliseconds(1));
    } catch (...) {
      // The expected "Timed out waiting" exception; the pairs are closed now.
    }
  }
  // A send that was partly written is queued in the pair and not woken by the error signal;
  // release waits on the buffers of the collective in flight directly.
  for (auto* buffer : inflight_) {
    buffer->abortWaitSend();
    buffer->abortWaitRecv();
  }
}

}  // namespace gloo

Result<std::unique_ptr<Communicator>> createGlooCommunicator(const GlooOptions& options) {
  if (options.size < 1) {
    return invalidArgument("gloo: size must be at least 1, got " + std::to_string(options.size));
  }
  if (options.rank < 0 || options.rank >= options.size) {
    return invalidArgument("gloo: rank " + std::to_string(options.rank) + " is not in 0.." +
                           std::to_string(options.size - 1));
  }
  if (options.store == nullptr) return invalidArgument("gloo: no rendezvous store given");
  if (options.timeout.count() <= 0) {
    return invalidArgument("gloo: timeout must be positive, got " + gloo::ms(options.timeout));
  }
  gloo::ignoreSigpipeIfDefault();
  const std::string where =
      " (rank " + std::to_string(options.rank) + " of " + std::to_string(options.size) + ")";

  if (!options.interface.empty() && !gloo::interfaceHasAddress(options.interface)) {
    return invalidArgument("gloo: network interface '" + options.interface +
                           "' does not exist or has no IP address" + where);
  }
  std::shared_ptr<::gloo::transport::Device> device;
  ::gloo::transport::tcp::attr attr;
  try {
    if (!options.interface.empty()) {
      attr.iface = options.interface;
    } else {
      attr.hostname = options.hostname;
    }
    attr = ::gloo::transport::tcp::CreateDeviceAttr(attr);  // the address Gloo binds
    device = ::gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    const std::string what = !options.interface.empty()  ? "interface '" + options.interface + "'"
                             : !options.hostname.empty() ? "host '" + options.hostname + "'"
                                                         : "this machine's host name";
    return invalidArgument("gloo: cannot bind " + what + where + ": " + e.what());
  }

  auto context = std::make_shared<::gloo::rendezvous::Context>(options.rank, options.size);
  context->setTimeout(options.timeout);
  gloo::GlooStoreAdapter store(*options.store, options.storePrefix, options.timeout);
  std::string error;
  try {
    context->connectFullMesh(store, device);
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown exception";
  }
  if (!error.empty()) {
    Status storeError = store.firstError();
    if (storeError.code() == ErrorCode::kTimeout) {
      return timeoutError("gloo rendezvous timed out after " + gloo::ms(options.timeout) + where +
                          ": a rank did not join; " + storeError.message());
    }
    if (!storeError.isOk()) {
      return Status(storeError.code(),
                    "gloo rendezvous failed" + where + ": " + storeError.message());
    }
    if (gloo::mentionsTimeout(error)) {
      return timeoutError("gloo connect timed out after " + gloo::ms(options.timeout) + where +
                          ": " + error);
    }
    return ioError("gloo connect failed" + where + ": " + error);
  }
  auto communicator = std::make_unique<gloo::GlooCommunicator>(std::move(context), options);
  const char* shm = std::getenv("RINGMASTER_GLOO_SHM");
  if (options.sharedMemory && !(shm && std::string(shm) == "0")) {
    if (Status status = communicator->setUpSharedMemory(); !status.isOk()) {
      return Status(status.code(),
                    "gloo shared-memory set-up failed" + where + ": " + status.message());
    }
  }
  const char* ring = std::getenv("RINGMASTER_TCP_RING");
  if (!communicator->usesSharedMemory() && options.tcpRing && !(ring && std::string(ring) == "0")) {
    if (Status status =
            communicator->setUpTcpRing(attr.ai_addr, *options.store, options.storePrefix);
        !status.isOk()) {
      return Status(status.code(), "tcp ring set-up failed" + where + ": " + status.message());
    }
  }
  return std::unique_ptr<Communicator>(std::move(communicator));
}

}  // namespace ringmaster::comm

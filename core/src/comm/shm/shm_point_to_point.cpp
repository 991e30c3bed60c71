// ShmGroup's point-to-point messages (see shm_group.h): a channel per ordered pair of ranks, after
// the collectives' slots in the segment, and a doorbell per rank.
#include <algorithm>
#include <cstring>

#include "comm/shm/futex.h"
#include "comm/shm/shm_group.h"

namespace ringmaster::comm::shm {
namespace {

// A channel holds one chunk at a time; with size^2 channels the budget caps the segment.
constexpr size_t kMailboxBudget = size_t{8} << 20;
constexpr size_t kMaxChannelBytes = size_t{64} << 10;
constexpr size_t kMinChannelBytes = size_t{4} << 10;

}  // namespace

// Rung (count incremented, then a wake if the owner sleeps) by whoever changes a channel the
// owner waits on: a sender posting to it, a receiver taking what it sent, markBroken().
struct ShmGroup::Bell {
  alignas(kLine) std::atomic<uint32_t> count{0};
  alignas(kLine) std::atomic<uint32_t> sleepers{0};
};

// One direction between two ranks. The sender fills the fields and the data, then increments
// `posted`; the receiver copies them out, then increments `taken`. Empty when they are equal.
struct ShmGroup::Channel {
  alignas(kLine) std::atomic<uint32_t> posted{0};
  alignas(kLine) std::atomic<uint32_t> taken{0};
  alignas(kLine) uint32_t tag = 0;
  uint64_t message_bytes = 0;       // the whole message's
  uint64_t chunk_bytes = 0;         // this chunk's
  alignas(kLine) char data[kLine];  // channelBytes() of them
};

size_t ShmGroup::channelBytes(int size) {
  const size_t n = static_cast<size_t>(size);
  return std::clamp(kMailboxBudget / (n * n) / kLine * kLine, kMinChannelBytes, kMaxChannelBytes);
}

size_t ShmGroup::mailboxBytes(int size) {
  const size_t n = static_cast<size_t>(size);
  return n * sizeof(Bell) + n * n * (offsetof(Channel, data) + channelBytes(size));
}

ShmGroup::Bell* ShmGroup::bell(int rank) const {
  return reinterpret_cast<Bell*>(static_cast<char*>(base_) + mailbox_offset_) + rank;
}

ShmGroup::Channel* ShmGroup::channel(int from, int to) const {
  const size_t stride = offsetof(Channel, data) + channelBytes(size_);
  const size_t index = static_cast<size_t>(from) * static_cast<size_t>(size_) + to;
  return reinterpret_cast<Channel*>(static_cast<char*>(base_) + mailbox_offset_ +
                                    static_cast<size_t>(size_) * sizeof(Bell) + index * stride);
}

void ShmGroup::ring(int rank) {
  Bell* b = bell(rank);
  b->count.fetch_add(1, std::memory_order_seq_cst);
  if (b->sleepers.load(std::memory_order_seq_cst) > 0) futexWakeAll(b->count);
}

template <typename Ready>
Status ShmGroup::waitForBell(Ready&& ready, Clock::time_point deadline,
                             const std::atomic<bool>& aborted) {
  Bell* mine = bell(rank_);
  return spinThenSleep(
      mine->count, mine->sleepers,
      [&]() -> std::optional<Status> {
        if (brokenFlag()) return ioError("a peer failed or was aborted");
        if (ready()) return Status::ok();
        return std::nullopt;
      },
      [this] { return peerGone(); }, deadline, aborted);
}

Status ShmGroup::send(const void* data, size_t bytes, int peer, uint32_t tag,
                      Clock::time_point deadline, const std::atomic<bool>& aborted) {
  Channel* ch = channel(rank_, peer);
  const size_t capacity = channelBytes(size_);
  const auto* in = static_cast<const char*>(data);
  size_t offset = 0;
  do {  // an empty message is one empty chunk
    RM_RETURN_IF_ERROR(waitForBell(
        [&] {
          return ch->taken.load(std::memory_order_acquire) ==
                 ch->posted.load(std::memory_order_relaxed);
        },
        deadline, aborted));
    const size_t n = std::min(capacity, bytes - offset);
    ch->tag = tag;
    ch->message_bytes = bytes;
    ch->chunk_bytes = n;
    if (n > 0) std::memcpy(ch->data, in + offset, n);
    ch->posted.fetch_add(1, std::memory_order_release);
    ring(peer);
    offset += n;
  } while (offset < bytes);
  return Status::ok();
}

Status ShmGroup::takeMessage(int peer, char* out, Clock::time_point deadline,
                             const std::atomic<bool>& aborted) {
  Channel* ch = channel(peer, rank_);
  const uint64_t total = ch->message_bytes;
  uint64_t offset = 0;
  do {
    RM_RETURN_IF_ERROR(waitForBell(
        [&] {
          return ch->posted.load(std::memory_order_acquire) !=
                 ch->taken.load(std::memory_order_relaxed);
        },
        deadline, aborted));
    const uint64_t n = ch->chunk_bytes;
    if (n > 0) std::memcpy(out + offset, ch->data, n);
    ch->taken.fetch_add(1, std::memory_order_release);
    ring(peer);  // its next chunk may go in
    offset += n;
  } while (offset < total);
  return Status::ok();
}

std::optional<Status> ShmGroup::takeAside(int peer, uint32_t tag, void* data, size_t bytes) {
  auto it = aside_.find({peer, tag});
  if (it == aside_.end() || it->second.empty()) return std::nullopt;
  std::vector<char> message = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) aside_.erase(it);
  if (message.size() != bytes) {
    return invalidArgument("a message of tag " + std::to_string(tag) + " from rank " +
                           std::to_string(peer) + " has " + std::to_string(message.size()) +
                           " bytes, " + std::to_string(bytes) + " expected");
  }
  if (bytes > 0) std::memcpy(data, message.data(), bytes);
  return Status::ok();
}

Result<bool> ShmGroup::headIs(int peer, uint32_t tag, Clock::time_point deadline,
                              const std::atomic<bool>& aborted) {
  Channel* ch = channel(peer, rank_);
  while (ch->posted.load(std::memory_order_acquire) != ch->taken.load(std::memory_order_relaxed)) {
    if (ch->tag == tag) return true;
    std::vector<char> message(ch->message_bytes);
    const uint32_t other = ch->tag;
    RM_RETURN_IF_ERROR(takeMessage(peer, message.data(), deadline, aborted));
    aside_[{peer, other}].push_back(std::move(message));
  }
  return false;
}

Status ShmGroup::recv(void* data, size_t bytes, int peer, uint32_t tag, Clock::time_point deadline,
                      const std::atomic<bool>& aborted) {
  const int peers[] = {peer};
  Result<int> from = recvFromAny(data, bytes, peers, tag, deadline, aborted);
  return from.status();
}

Result<int> ShmGroup::recvFromAny(void* data, size_t bytes, std::span<const int> peers,
                                  uint32_t tag, Clock::time_point deadline,
                                  const std::atomic<bool>& aborted) {
  for (int peer : peers) {
    if (std::optional<Status> taken = takeAside(peer, tag, data, bytes)) {
      if (!taken->isOk()) return *taken;
      return peer;
    }
  }
  int from = -1;
  Status error;
  RM_RETURN_IF_ERROR(waitForBell(
      [&] {
        for (int peer : peers) {
          Result<bool> head = headIs(peer, tag, deadline, aborted);
          if (!head.isOk()) {
            error = head.status();
            return true;
          }
          if (*head) {
            from = peer;
            return true;
          }
        }
        return false;
      },
      deadline, aborted));
  RM_RETURN_IF_ERROR(error);
  const uint64_t size = channel(from, rank_)->message_bytes;
  if (size != bytes) {
    return invalidArgument("a message of tag " + std::to_string(tag) + " from rank " +
                           std::to_string(from) + " has " + std::to_string(size) + " bytes, " +
                           std::to_string(bytes) + " expected");
  }
  RM_RETURN_IF_ERROR(takeMessage(from, static_cast<char*>(data), deadline, aborted));
  return from;
}

}  // namespace ringmaster::comm::shm

#pragma once
// FairQueue: work queued per key and taken in turn, one item of each key with work before a
// second of any (round robin over keys), so that a key with many connections or many requests
// gets no more turns than a key with one. The agent queues the requests that take time to
// answer (journal and log reads, launches) here, keyed by the requesting client's key.
//
// Not thread-safe: the agent's main thread owns it.

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace ringmaster::agent {

template <typename Item>
class FairQueue {
 public:
  // `max_per_key`: how many items one key may have waiting; push() refuses more.
  explicit FairQueue(size_t max_per_key) : max_per_key_(max_per_key) {}

  // False, leaving `item` as it was, when the key has max_per_key items waiting already.
  bool push(const std::string& key, Item&& item) {
    auto [queue, added] = queues_.try_emplace(key);
    if (queue->second.size() >= max_per_key_) return false;
    queue->second.push_back(std::move(item));
    if (added) turns_.push_back(queue->first);  // not `key`: it may be a part of `item`
    ++size_;
    return true;
  }

  // The next key's oldest item; that key goes to the back of the turns.
  std::optional<Item> pop() {
    if (turns_.empty()) return std::nullopt;
    const std::string key = std::move(turns_.front());
    turns_.pop_front();
    auto queue = queues_.find(key);
    Item item = std::move(queue->second.front());
    queue->second.pop_front();
    if (queue->second.empty()) {
      queues_.erase(queue);
    } else {
      turns_.push_back(key);
    }
    --size_;
    return item;
  }

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  size_t keys() const { return turns_.size(); }  // keys with work waiting

 private:
  const size_t max_per_key_;
  std::map<std::string, std::deque<Item>> queues_;  // only keys with items
  std::deque<std::string> turns_;                   // each key of queues_ once, next first
  size_t size_ = 0;
};

}  // namespace ringmaster::agent

#pragma once
// The rendezvous store the comm layer bootstraps from: ranks publish their addresses (Gloo) or the
// ncclUniqueId (NCCL) under agreed keys and wait for each other's.
//
// In a job, the store is served by rank 0's agent (over ZeroMQ, with the job's credential); in
// tests it is an InMemoryStore shared by one thread per rank. The interface is deliberately small
// so that a network-backed implementation has little to get right.

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/util/result.h"

namespace ringmaster::comm {

// A key-value store that several ranks (threads or processes) share during rendezvous.
//
// Implementations are thread-safe: every rank of a test may call the same instance at once.
// Values are arbitrary bytes. Keys are written once per rendezvous in practice; a second set()
// of the same key replaces the value. Nothing here deletes keys: a store lives for one job
// attempt, so callers use a fresh key prefix (see GlooOptions::storePrefix) per communicator.
class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;

  // Publishes `value` under `key`, waking every get()/wait() blocked on that key.
  // Errors: UNAVAILABLE / IO when the backing service cannot be reached.
  virtual Status set(const std::string& key, std::string_view value) = 0;

  // Waits until `key` is present and returns its value.
  // Errors: TIMEOUT (the message names the key and the timeout) when `key` does not appear
  // within `timeout`; UNAVAILABLE / IO when the backing service fails.
  virtual Result<std::string> get(const std::string& key, std::chrono::milliseconds timeout) = 0;

  // Waits until every key in `keys` is present, sharing one deadline. The default implementation
  // calls get() for each key with the time that is left; override it when the backend can wait
  // on several keys at once.
  virtual Status wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
};

// An in-process KeyValueStore (a map, a mutex and a condition variable), for ranks that are
// threads of one process: tests and benchmarks. Thread-safe.
class InMemoryStore final : public KeyValueStore {
 public:
  Status set(const std::string& key, std::string_view value) override;
  Result<std::string> get(const std::string& key, std::chrono::milliseconds timeout) override;
  Status wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;

  // Number of keys stored; for tests.
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string, std::less<>> values_;  // GUARDED_BY(mutex_)
};

}  // namespace ringmaster::comm

#pragma once
// The ZAP handler (RFC 27) that decides which CURVE clients an agent serves: only keys listed in
// authorized_keys. The file is re-read when it changes, so `ringmaster-agent authorize` takes
// effect without a restart. Runs on its own thread with its own REP socket, bound to
// inproc://zeromq.zap.01 in the agent's context before any CURVE socket exists.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "refusal_log.h"
#include "ringmaster/security/keys.h"
#include "ringmaster/util/result.h"

namespace ringmaster::agent {

class ZapHandler {
 public:
  using Logger = std::function<void(const std::string&)>;

  ZapHandler(void* zmq_context, std::string authorized_keys_path, Logger log);
  ~ZapHandler();  // stops and joins

  // Binds the handler socket and starts the thread. Call before binding any CURVE socket.
  Status start();

  // Admits a key that is not in authorized_keys, as `user_id`: "job:<id>" for a job's own key
  // (its agents' gang connections), "attempt:<id>:<n>" for the ranks' credential of one attempt.
  // The agent decides what each may do. Thread-safe.
  void allowKey(const std::string& public_key, const std::string& user_id);
  void revokeKey(const std::string& public_key);

  // The role `z85_key` has in authorized_keys now, nullopt when it is not there (the file is
  // re-read when it changed, looked at most every 100 ms). Thread-safe.
  std::optional<security::Role> roleOf(const std::string& z85_key);

  // The user id a key authenticates as: "client:<key>" for authorized_keys, else the one it
  // was allowed as; empty when refused. Public for tests.
  std::string userFor(const std::string& z85_key);

 private:
  void run();
  void reloadIfChanged();  // REQUIRES: keys_mutex_ held
  void reload();           // REQUIRES: keys_mutex_ held
  // Whether the file loaded last was written less than `window` ago. REQUIRES: keys_mutex_ held
  bool changedWithin(std::chrono::milliseconds window) const;
  static constexpr std::chrono::milliseconds kRewriteSettle{50};

  void* context_;
  std::string path_;
  Logger log_;
  RefusalLog refusals_;  // used by the handler's thread only
  void* socket_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex keys_mutex_;
  std::map<std::string, security::Role> keys_;  // GUARDED_BY(keys_mutex_), as the loaded_* below
  std::chrono::steady_clock::time_point next_look_{};
  std::mutex allowed_mutex_;
  std::map<std::string, std::string> allowed_;  // key -> user id; GUARDED_BY(allowed_mutex_)
  timespec loaded_mtime_{};
  off_t loaded_size_ = -1;
  ino_t loaded_inode_ = 0;
};

}  // namespace ringmaster::agent

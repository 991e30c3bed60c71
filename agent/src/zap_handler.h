#pragma once
// The ZAP handler (RFC 27) that decides which CURVE clients an agent serves: only keys listed in
// authorized_keys. The file is re-read when it changes, so `ringmaster-agent authorize` takes
// effect without a restart. Runs on its own thread with its own REP socket, bound to
// inproc://zeromq.zap.01 in the agent's context before any CURVE socket exists.

#include <sys/types.h>

#include <atomic>
#include <ctime>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "refusal_log.h"
#include "ringmaster/util/result.h"

namespace ringmaster::agent {

class ZapHandler {
 public:
  using Logger = std::function<void(const std::string&)>;

  ZapHandler(void* zmq_context, std::string authorized_keys_path, Logger log);
  ~ZapHandler();  // stops and joins

  // Binds the handler socket and starts the thread. Call before binding any CURVE socket.
  Status start();

  // Admits `public_key` as the rendezvous credential of `job_id` (rank 0's agent of a job does
  // this at launch). Such peers carry the user id "job:<job_id>"; the agent lets them use that
  // job's rendezvous store and nothing else. Thread-safe.
  void allowJobKey(const std::string& public_key, const std::string& job_id);
  void revokeJobKey(const std::string& public_key);

  // The user id a key authenticates as: "client" for authorized_keys, "job:<id>" for a job
  // credential, empty when refused. Public for tests.
  std::string userFor(const std::string& z85_key);

 private:
  void run();
  void reloadIfChanged();

  void* context_;
  std::string path_;
  Logger log_;
  RefusalLog refusals_;  // used by the handler's thread only
  void* socket_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::set<std::string> keys_;
  std::mutex job_keys_mutex_;
  std::map<std::string, std::string> job_keys_;  // key -> job id; GUARDED_BY(job_keys_mutex_)
  timespec loaded_mtime_{};
  off_t loaded_size_ = -1;
  ino_t loaded_inode_ = 0;
};

}  // namespace ringmaster::agent

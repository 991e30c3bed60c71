#pragma once
// The ZAP handler (RFC 27) that decides which CURVE clients an agent serves: only keys listed in
// authorized_keys. The file is re-read when it changes, so `ringmaster-agent authorize` takes
// effect without a restart. Runs on its own thread with its own REP socket, bound to
// inproc://zeromq.zap.01 in the agent's context before any CURVE socket exists.

#include <sys/types.h>

#include <atomic>
#include <ctime>
#include <functional>
#include <set>
#include <string>
#include <thread>

#include "ringmaster/util/result.h"

namespace ringmaster::agent {

class ZapHandler {
 public:
  using Logger = std::function<void(const std::string&)>;

  ZapHandler(void* zmq_context, std::string authorized_keys_path, Logger log);
  ~ZapHandler();  // stops and joins

  // Binds the handler socket and starts the thread. Call before binding any CURVE socket.
  Status start();

  // Decision for one key; public for tests.
  bool isAuthorized(const std::string& z85_key);

 private:
  void run();
  void reloadIfChanged();

  void* context_;
  std::string path_;
  Logger log_;
  void* socket_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::set<std::string> keys_;
  timespec loaded_mtime_{};
  off_t loaded_size_ = -1;
  ino_t loaded_inode_ = 0;
};

}  // namespace ringmaster::agent

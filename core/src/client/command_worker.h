#pragma once
// CommandWorker: the thread on which a ClusterSession runs the commands that wait on agents
// (submit, stop, restart, log reads), one at a time in the order posted, with a ClusterClient of
// its own. An agent that takes its time answering (frozen, or behind a slow link) holds up only
// the commands queued behind it, never the session's watch of every agent (health, journals).
//
// Thread safety: post() and reload() may be called from any thread; tasks run on the worker's
// thread, which owns the client and its sockets.

#include <functional>
#include <memory>

#include "ringmaster/client/cluster_client.h"
#include "ringmaster/store/store.h"
#include "ringmaster/util/task_thread.h"

namespace ringmaster::client {

class CommandWorker {
 public:
  // `writer` (thread-safe, outliving the worker) is the client's: one writer of the history in
  // a process. With `connect_early`, the client connects to every agent as soon as it is
  // opened, so that the first command does not wait for the CURVE handshakes.
  CommandWorker(ClientPaths paths, store::BatchWriter* writer, bool connect_early = false);
  // Lets the task in progress finish, drops those still queued, and joins.
  ~CommandWorker();
  CommandWorker(const CommandWorker&) = delete;
  CommandWorker& operator=(const CommandWorker&) = delete;

  // A task gets the client, or null and why there is none (no cluster file, a bad one).
  using Task = std::function<void(ClusterClient* client, const Status& why_none)>;
  void post(Task task);
  // Opens the client again from the cluster file, after the tasks posted before.
  void reload();

 private:
  void open();  // on the worker's thread

  const ClientPaths paths_;
  store::BatchWriter* const writer_;
  const bool connect_early_;
  std::unique_ptr<ClusterClient> client_;  // the worker thread's; null: why_none_ says why
  Status why_none_;                        // the worker thread's
  TaskThread thread_;                      // last: joined before the client goes
};

}  // namespace ringmaster::client

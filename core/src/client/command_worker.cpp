#include "client/command_worker.h"

#include <filesystem>
#include <utility>

namespace ringmaster::client {

CommandWorker::CommandWorker(ClientPaths paths, store::BatchWriter* writer, bool connect_early)
    : paths_(std::move(paths)),
      writer_(writer),
      connect_early_(connect_early),
      thread_([this] { run(); }) {}

CommandWorker::~CommandWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void CommandWorker::post(Task task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    items_.push_back({std::move(task)});
  }
  wake_.notify_one();
}

void CommandWorker::reload() { post({}); }

void CommandWorker::run() {
  std::unique_ptr<ClusterClient> client;
  Status why_none;
  const auto open = [&] {
    auto opened = ClusterClient::open(paths_);
    if (!opened.isOk()) {
      client.reset();
      why_none = std::filesystem::exists(paths_.cluster_file)
                     ? opened.status()
                     : notFound("no cluster file at " + paths_.cluster_file);
      return;
    }
    client = std::move(*opened);
    client->shareWriter(writer_);
    why_none = Status::ok();
    // Connecting only starts the handshakes (libzmq's I/O thread goes on with them); an agent
    // that cannot be reached is reported by the command that needs it.
    if (connect_early_) {
      for (const AgentEndpoint& agent : client->agents()) (void)client->connection(agent.name);
    }
  };
  open();
  while (true) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !items_.empty(); });
      if (stopping_) return;
      item = std::move(items_.front());
      items_.pop_front();
    }
    if (item.task) {
      item.task(client.get(), why_none);
    } else {
      open();
    }
  }
}

}  // namespace ringmaster::client

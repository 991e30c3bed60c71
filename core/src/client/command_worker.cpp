#include "client/command_worker.h"

#include <filesystem>
#include <utility>

namespace ringmaster::client {

CommandWorker::CommandWorker(ClientPaths paths, store::BatchWriter* writer)
    : paths_(std::move(paths)), writer_(writer), thread_([this] { run(); }) {}

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

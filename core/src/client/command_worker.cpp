#include "client/command_worker.h"

#include <filesystem>
#include <utility>

namespace ringmaster::client {

CommandWorker::CommandWorker(ClientPaths paths, store::BatchWriter* writer, bool connect_early)
    : paths_(std::move(paths)), writer_(writer), connect_early_(connect_early) {
  thread_.post([this] { open(); });
}

CommandWorker::~CommandWorker() = default;

void CommandWorker::post(Task task) {
  thread_.post([this, task = std::move(task)] { task(client_.get(), why_none_); });
}

void CommandWorker::reload() {
  thread_.post([this] { open(); });
}

void CommandWorker::open() {
  auto opened = ClusterClient::open(paths_);
  if (!opened.isOk()) {
    client_.reset();
    why_none_ = std::filesystem::exists(paths_.cluster_file)
                    ? opened.status()
                    : notFound("no cluster file at " + paths_.cluster_file);
    return;
  }
  client_ = std::move(*opened);
  client_->shareWriter(writer_);
  why_none_ = Status::ok();
  // Connecting only starts the handshakes (libzmq's I/O thread goes on with them); an agent
  // that cannot be reached is reported by the command that needs it.
  if (connect_early_) {
    for (const AgentEndpoint& agent : client_->agents()) (void)client_->connection(agent.name);
  }
}

}  // namespace ringmaster::client

#include "zap_handler.h"

#include <sys/stat.h>
#include <zmq.h>

#include <vector>

#include "ringmaster/security/keys.h"

namespace ringmaster::agent {
namespace {

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";

std::vector<std::string> receiveMultipart(void* socket) {
  std::vector<std::string> frames;
  bool more = true;
  while (more) {
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    if (zmq_msg_recv(&frame, socket, 0) < 0) {
      zmq_msg_close(&frame);
      return {};
    }
    frames.emplace_back(static_cast<const char*>(zmq_msg_data(&frame)), zmq_msg_size(&frame));
    more = zmq_msg_more(&frame);
    zmq_msg_close(&frame);
  }
  return frames;
}

void sendReply(void* socket, const std::string& request_id, bool ok, const std::string& user) {
  const std::string frames[] = {
      "1.0",          request_id, ok ? "200" : "400", ok ? "OK" : "key not in authorized_keys",
      ok ? user : "", ""};
  for (size_t i = 0; i < 6; ++i) {
    zmq_send(socket, frames[i].data(), frames[i].size(), i + 1 < 6 ? ZMQ_SNDMORE : 0);
  }
}

}  // namespace

ZapHandler::ZapHandler(void* zmq_context, std::string authorized_keys_path, Logger log)
    : context_(zmq_context),
      path_(std::move(authorized_keys_path)),
      log_(std::move(log)),
      refusals_(log_) {}

ZapHandler::~ZapHandler() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (socket_) zmq_close(socket_);
}

Status ZapHandler::start() {
  socket_ = zmq_socket(context_, ZMQ_REP);
  int linger = 0, timeout_ms = 200;
  zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof linger);
  zmq_setsockopt(socket_, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
  if (zmq_bind(socket_, kZapEndpoint) != 0) {
    return ioError(std::string("cannot bind the ZAP handler: ") + zmq_strerror(zmq_errno()));
  }
  {
    std::lock_guard<std::mutex> lock(keys_mutex_);
    reload();
  }
  thread_ = std::thread([this] { run(); });
  return Status::ok();
}

void ZapHandler::reloadIfChanged() {
  // Every request asks (a removed key loses its connections): one stat per 100 ms is enough.
  const auto now = std::chrono::steady_clock::now();
  if (now < next_look_) return;
  next_look_ = now + std::chrono::milliseconds(100);
  reload();
}

void ZapHandler::reload() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    keys_.clear();
    loaded_size_ = -1;
    return;
  }
  if (st.st_mtim.tv_sec == loaded_mtime_.tv_sec && st.st_mtim.tv_nsec == loaded_mtime_.tv_nsec &&
      st.st_size == loaded_size_ && st.st_ino == loaded_inode_) {
    return;
  }
  std::vector<int> bad_lines;
  auto keys = security::readAuthorizedKeys(path_, &bad_lines);
  if (!keys.isOk()) {
    log_("cannot read " + path_ + ": " + keys.status().message() + "; keeping the previous keys");
    return;
  }
  for (int line : bad_lines) {
    log_(path_ + ":" + std::to_string(line) + ": not a key with role=admin or role=user, skipped");
  }
  keys_.clear();
  size_t users = 0;
  for (const auto& entry : *keys) {
    keys_[entry.key] = entry.role;
    users += entry.role == security::Role::kUser;
  }
  loaded_mtime_ = st.st_mtim;
  loaded_size_ = st.st_size;
  loaded_inode_ = st.st_ino;
  log_("authorized_keys: " + std::to_string(keys_.size()) + " key(s) loaded, " +
       std::to_string(users) + " with role user");
}

bool ZapHandler::changedWithin(std::chrono::milliseconds window) const {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const auto age = std::chrono::seconds(now.tv_sec - loaded_mtime_.tv_sec) +
                   std::chrono::nanoseconds(now.tv_nsec - loaded_mtime_.tv_nsec);
  return age < window;
}

void ZapHandler::allowKey(const std::string& public_key, const std::string& user_id) {
  std::lock_guard<std::mutex> lock(allowed_mutex_);
  allowed_[public_key] = user_id;
}

void ZapHandler::revokeKey(const std::string& public_key) {
  std::lock_guard<std::mutex> lock(allowed_mutex_);
  allowed_.erase(public_key);
}

std::optional<security::Role> ZapHandler::roleOf(const std::string& z85_key) {
  std::lock_guard<std::mutex> lock(keys_mutex_);
  reloadIfChanged();
  auto it = keys_.find(z85_key);
  if (it == keys_.end()) return std::nullopt;
  return it->second;
}

std::string ZapHandler::userFor(const std::string& z85_key) {
  {
    // A handshake always looks at the file: a key authorized a moment ago must get in, since
    // a client is not retried once refused.
    std::unique_lock<std::mutex> lock(keys_mutex_);
    reload();
    if (keys_.count(z85_key) > 0) return "client:" + z85_key;
    // A file rewritten in place (truncated, then written: `echo KEY > authorized_keys`) can be
    // read half-written, without keys that are there a moment later. An unknown key is looked
    // for once more, kRewriteSettle later, while the file changed that recently; refused
    // handshakes are for good.
    if (changedWithin(kRewriteSettle)) {
      lock.unlock();
      std::this_thread::sleep_for(kRewriteSettle);
      lock.lock();
      reload();
      if (keys_.count(z85_key) > 0) return "client:" + z85_key;
    }
  }
  std::lock_guard<std::mutex> lock(allowed_mutex_);
  auto it = allowed_.find(z85_key);
  return it == allowed_.end() ? "" : it->second;
}

void ZapHandler::run() {
  while (!stop_) {
    std::vector<std::string> frames = receiveMultipart(socket_);
    if (frames.empty()) continue;  // timeout: check the stop flag
    // version, request id, domain, address, identity, mechanism, credentials...
    if (frames.size() < 6) {
      sendReply(socket_, frames.size() > 1 ? frames[1] : "", false, "");
      continue;
    }
    const std::string& address = frames[3];
    const std::string& mechanism = frames[5];
    std::string user;
    std::string key_text = "(none)";
    if (frames[0] == "1.0" && mechanism == "CURVE" && frames.size() >= 7 &&
        frames[6].size() == 32) {
      char z85[41];
      zmq_z85_encode(z85, reinterpret_cast<const uint8_t*>(frames[6].data()), 32);
      key_text = z85;
      user = userFor(key_text);
    }
    if (user.empty()) {
      refusals_.refused("refused " + mechanism + " client " + key_text + " from " + address +
                        " (not in " + path_ + ")");
    }
    sendReply(socket_, frames[1], !user.empty(), user);
  }
}

}  // namespace ringmaster::agent

#include "torch_error_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace ringmaster::agent {
namespace {
constexpr off_t kMostBytes = 1 << 20;
constexpr size_t kMostCharacters = 2000;
}  // namespace

std::optional<std::string> readTorchErrorFile(const std::string& path) {
  // The rank owns the file: O_NOFOLLOW, so a link it put there cannot make the agent read
  // another file into the journal.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat info {};
  std::string text;
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0 &&
      info.st_size <= kMostBytes) {
    text.resize(static_cast<size_t>(info.st_size));
    const ssize_t got = ::read(fd, text.data(), text.size());
    text.resize(got > 0 ? static_cast<size_t>(got) : 0);
  }
  ::close(fd);
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("message")) return std::nullopt;
  const nlohmann::json& message = json["message"];
  std::string found;
  if (message.is_string()) {
    found = message.get<std::string>();
  } else if (message.is_object() && message.contains("message") && message["message"].is_string()) {
    found = message["message"].get<std::string>();
  }
  while (!found.empty() && (found.back() == '\n' || found.back() == ' ')) found.pop_back();
  if (found.empty()) return std::nullopt;
  if (found.size() > kMostCharacters) found = found.substr(0, kMostCharacters) + "...";
  return found;
}

}  // namespace ringmaster::agent

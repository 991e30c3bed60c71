#include "ringmaster/train/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

#include "ringmaster/util/crc32.h"
#include "train/byte_io.h"

namespace ringmaster::train {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'R', 'M', 'C', 'K', 'P', 'T', '\r', '\n'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kByteOrderMark = 0x01020304;
constexpr size_t kHeaderSize = 8 + 4 + 4 + 8;
constexpr size_t kTrailerSize = 4;
constexpr const char* kPrefix = "ckpt-";
constexpr const char* kSuffix = ".rmck";

std::string errnoText(int err) { return std::strerror(err); }

// Writes all of `data` to `fd`, retrying short writes.
bool writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// The step in "ckpt-<digits>.rmck", or false for any other name (temporary files start with '.').
bool parseCheckpointName(const std::string& name, uint64_t* step) {
  const size_t prefix = std::strlen(kPrefix);
  const size_t suffix = std::strlen(kSuffix);
  if (name.size() <= prefix + suffix || name.compare(0, prefix, kPrefix) != 0 ||
      name.compare(name.size() - suffix, suffix, kSuffix) != 0) {
    return false;
  }
  uint64_t value = 0;
  for (size_t i = prefix; i < name.size() - suffix; ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    value = value * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  *step = value;
  return true;
}

// (step, path) of the directory's checkpoint files, newest first.
std::vector<std::pair<uint64_t, std::string>> listCheckpoints(const std::string& dir) {
  std::vector<std::pair<uint64_t, std::string>> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    uint64_t step = 0;
    if (parseCheckpointName(it->path().filename().string(), &step)) {
      found.emplace_back(step, it->path().string());
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a > b; });
  return found;
}

std::string encodePayload(const CheckpointState& state) {
  std::string payload;
  ByteWriter w(&payload);
  w.put<uint64_t>(state.step);
  w.put<uint64_t>(state.epoch);
  w.put<uint64_t>(state.sampler.epoch);
  w.put<uint64_t>(state.sampler.offset);
  w.put<uint32_t>(state.world_size);
  w.put<uint64_t>(state.batch_size);
  w.put<uint64_t>(state.params.size());
  w.putBytes(state.params.data(), state.params.size() * sizeof(float));
  w.putString(state.optimizer_state);
  w.put<uint64_t>(paramChecksum(state.params));
  return payload;
}

}  // namespace

uint64_t paramChecksum(std::span<const float> params) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  const auto* bytes = reinterpret_cast<const unsigned char*>(params.data());
  for (size_t i = 0; i < params.size_bytes(); ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string formatChecksum(uint64_t checksum) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, checksum);
  return buf;
}

std::string checkpointPath(const std::string& dir, uint64_t step) {
  char name[40];
  std::snprintf(name, sizeof(name), "%s%012" PRIu64 "%s", kPrefix, step, kSuffix);
  return (fs::path(dir) / name).string();
}

Status saveCheckpoint(const std::string& dir, const CheckpointState& state, size_t keep) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ioError(dir + ": cannot create the checkpoint directory: " + ec.message());

  // Header, payload and trailer are written one after the other, not copied into one buffer
  // first: the payload is the parameters and the optimizer's moments, 10 MB for the demo's MLP.
  const std::string payload = encodePayload(state);
  std::string header;
  ByteWriter h(&header);
  h.putBytes(kMagic, sizeof(kMagic));
  h.put<uint32_t>(kVersion);
  h.put<uint32_t>(kByteOrderMark);
  h.put<uint64_t>(payload.size());
  std::string trailer;
  ByteWriter(&trailer).put<uint32_t>(crc32(payload.data(), payload.size()));

  const std::string final_path = checkpointPath(dir, state.step);
  const std::string temp_path = (fs::path(dir) / ("." + fs::path(final_path).filename().string() +
                                                  ".tmp." + std::to_string(::getpid())))
                                    .string();
  const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ioError(temp_path + ": cannot create: " + errnoText(errno));
  if (!writeAll(fd, header.data(), header.size()) ||
      !writeAll(fd, payload.data(), payload.size()) ||
      !writeAll(fd, trailer.data(), trailer.size()) || ::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(temp_path.c_str());
    return ioError(temp_path + ": cannot write: " + errnoText(err));
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp_path.c_str());
    return ioError(temp_path + ": cannot close: " + errnoText(err));
  }
  if (::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_path.c_str());
    return ioError(final_path + ": cannot rename the temporary file into place: " + errnoText(err));
  }
  // The rename is durable only once the directory entry is on disk.
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return ioError(dir + ": cannot open to fsync: " + errnoText(errno));
  const int sync_result = ::fsync(dir_fd);
  const int sync_errno = errno;
  ::close(dir_fd);
  if (sync_result != 0) return ioError(dir + ": cannot fsync: " + errnoText(sync_errno));

  if (keep > 0) {
    const auto all = listCheckpoints(dir);
    for (size_t i = keep; i < all.size(); ++i) fs::remove(all[i].second, ec);
  }
  return Status::ok();
}

Result<CheckpointState> readCheckpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ioError(path + ": cannot open");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string file = buffer.str();
  const auto corrupt = [&](const std::string& why) { return ioError(path + ": " + why); };
  if (file.size() < kHeaderSize) {
    return corrupt("truncated: " + std::to_string(file.size()) + " bytes, shorter than the " +
                   std::to_string(kHeaderSize) + "-byte header");
  }
  ByteReader header(std::string_view(file).substr(0, kHeaderSize));
  char magic[8];
  header.getBytes(magic, sizeof(magic));
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0)
    return corrupt("not a Ringmaster checkpoint");
  const auto version = header.get<uint32_t>();
  const auto bom = header.get<uint32_t>();
  const auto length = header.get<uint64_t>();
  if (version != kVersion) {
    return Status(ErrorCode::kUnsupportedVersion,
                  path + ": checkpoint version " + std::to_string(version) +
                      ", this build reads version " + std::to_string(kVersion));
  }
  if (bom != kByteOrderMark) return corrupt("written on a machine of the other byte order");
  const size_t available = file.size() - kHeaderSize;
  if (available < length + kTrailerSize) {
    return corrupt("truncated: " + std::to_string(available) + " of " +
                   std::to_string(length + kTrailerSize) + " payload and checksum bytes");
  }
  if (available > length + kTrailerSize) {
    return corrupt(std::to_string(available - length - kTrailerSize) +
                   " unexpected bytes after the checksum");
  }
  const std::string_view payload = std::string_view(file).substr(kHeaderSize, length);
  ByteReader trailer(std::string_view(file).substr(kHeaderSize + length));
  const auto stored_crc = trailer.get<uint32_t>();
  const uint32_t actual_crc = crc32(payload.data(), payload.size());
  if (stored_crc != actual_crc) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "CRC mismatch (stored %08x, computed %08x)", stored_crc,
                  actual_crc);
    return corrupt(buf);
  }

  CheckpointState state;
  ByteReader r(payload);
  state.step = r.get<uint64_t>();
  state.epoch = r.get<uint64_t>();
  state.sampler.epoch = r.get<uint64_t>();
  state.sampler.offset = r.get<uint64_t>();
  state.world_size = r.get<uint32_t>();
  state.batch_size = r.get<uint64_t>();
  const auto count = r.get<uint64_t>();
  if (!r.ok() || count > r.remaining() / sizeof(float)) {
    return corrupt("the parameter count does not fit the payload");
  }
  state.params.resize(count);
  r.getBytes(state.params.data(), count * sizeof(float));
  state.optimizer_state = std::string(r.getString());
  const auto checksum = r.get<uint64_t>();
  if (!r.ok() || r.remaining() != 0) return corrupt("malformed payload");
  if (checksum != paramChecksum(state.params)) return corrupt("parameter checksum mismatch");
  return state;
}

Result<LoadedCheckpoint> loadLatestCheckpoint(const std::string& dir) {
  std::vector<std::string> skipped;
  for (const auto& [step, path] : listCheckpoints(dir)) {
    Result<CheckpointState> state = readCheckpoint(path);
    if (!state.isOk()) {
      skipped.push_back(state.status().message());
      continue;
    }
    if (state->step != step) {
      skipped.push_back(path + ": holds step " + std::to_string(state->step) +
                        ", not the step in its name");
      continue;
    }
    return LoadedCheckpoint{std::move(*state), path, std::move(skipped)};
  }
  std::string message = dir + ": no valid checkpoint";
  for (const std::string& s : skipped) message += "; skipped " + s;
  return notFound(message);
}

}  // namespace ringmaster::train

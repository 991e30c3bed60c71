#include "ringmaster/security/keys.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ringmaster::security {
namespace {

Status writePrivateFile(const std::string& path, const std::string& text, bool append) {
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  int fd = ::open(path.c_str(), flags, 0600);
  if (fd < 0) return ioError("cannot write " + path + ": " + std::strerror(errno));
  ::fchmod(fd, 0600);
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = (::fsync(fd) == 0) && ok;
  ::close(fd);
  if (!ok) return ioError("cannot write " + path + ": " + std::strerror(errno));
  return Status::ok();
}

}  // namespace

bool isValidKey(const std::string& key) {
  if (key.size() != 40) return false;
  uint8_t decoded[32];
  return zmq_z85_decode(decoded, key.c_str()) != nullptr;
}

std::string keyFingerprint(const std::string& z85_key) {
  if (z85_key.size() != 40) return "";
  uint8_t decoded[32];
  if (zmq_z85_decode(decoded, z85_key.c_str()) == nullptr) return "";
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis
  for (uint8_t byte : decoded) {
    hash ^= byte;
    hash *= 0x100000001b3ull;  // FNV-1a 64 prime
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (int i = 7; i >= 0; --i) {
    const auto byte = static_cast<uint8_t>(hash >> (8 * i));
    if (!text.empty()) text += ':';
    text += kHex[byte >> 4];
    text += kHex[byte & 0xf];
  }
  return text;
}

Result<KeyPair> generateKeyPair() {
  char public_key[41], secret_key[41];
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    return internalError(std::string("zmq_curve_keypair failed: ") + zmq_strerror(zmq_errno()));
  }
  return KeyPair{public_key, secret_key};
}

Result<KeyPair> attemptKeyPair(const KeyPair& job_keys, uint32_t attempt) {
  if (!isValidKey(job_keys.secret_key)) return invalidArgument("the job's secret key is not valid");
  if (sodium_init() < 0) return internalError("libsodium cannot be initialized");
  uint8_t job_secret[32];
  zmq_z85_decode(job_secret, job_keys.secret_key.c_str());
  const uint8_t le_attempt[4] = {static_cast<uint8_t>(attempt), static_cast<uint8_t>(attempt >> 8),
                                 static_cast<uint8_t>(attempt >> 16),
                                 static_cast<uint8_t>(attempt >> 24)};
  static constexpr char kContext[] = "ringmaster attempt credential v1";
  crypto_generichash_state state;
  crypto_generichash_init(&state, job_secret, sizeof job_secret, 32);
  crypto_generichash_update(&state, reinterpret_cast<const uint8_t*>(kContext),
                            sizeof kContext - 1);
  crypto_generichash_update(&state, le_attempt, sizeof le_attempt);
  uint8_t secret[32];
  crypto_generichash_final(&state, secret, sizeof secret);
  char secret_z85[41], public_z85[41];
  zmq_z85_encode(secret_z85, secret, sizeof secret);
  sodium_memzero(secret, sizeof secret);
  sodium_memzero(job_secret, sizeof job_secret);
  if (zmq_curve_public(public_z85, secret_z85) != 0) {
    return internalError(std::string("zmq_curve_public failed: ") + zmq_strerror(zmq_errno()));
  }
  return KeyPair{public_z85, secret_z85};
}

Result<KeyPair> loadOrCreateKeyPair(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    RM_ASSIGN_OR_RETURN(KeyPair pair, generateKeyPair());
    RM_RETURN_IF_ERROR(writePrivateFile(
        path, "public " + pair.public_key + "\nsecret " + pair.secret_key + "\n", false));
    return pair;
  }
  KeyPair pair;
  std::string label, key;
  while (in >> label >> key) {
    if (label == "public") pair.public_key = key;
    if (label == "secret") pair.secret_key = key;
  }
  if (!isValidKey(pair.public_key) || !isValidKey(pair.secret_key)) {
    return invalidArgument(
        "key file " + path +
        " is malformed: expected lines 'public <Z85 key>' and 'secret <Z85 key>'");
  }
  return pair;
}

Result<KeyPair> rotateKeyPair(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return notFound("no key pair at " + path + " to rotate (`ringmaster-agent pubkey` makes one)");
  }
  std::stringstream old_text;
  old_text << in.rdbuf();
  // A malformed file is refused rather than kept as .previous.
  RM_RETURN_IF_ERROR(loadOrCreateKeyPair(path).status());
  RM_RETURN_IF_ERROR(writePrivateFile(path + ".previous", old_text.str(), false));
  RM_ASSIGN_OR_RETURN(KeyPair pair, generateKeyPair());
  // Written aside and renamed over: a crash leaves the old pair or the new one, never half.
  const std::string temporary = path + ".tmp";
  RM_RETURN_IF_ERROR(writePrivateFile(
      temporary, "public " + pair.public_key + "\nsecret " + pair.secret_key + "\n", false));
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    return ioError("cannot replace " + path + ": " + std::strerror(errno));
  }
  return pair;
}

const char* roleName(Role role) { return role == Role::kUser ? "user" : "admin"; }

std::optional<Role> parseRole(const std::string& name) {
  if (name == "admin") return Role::kAdmin;
  if (name == "user") return Role::kUser;
  return std::nullopt;
}

namespace {

// One line of authorized_keys; nullopt when it is not a key line (and sets *malformed when it
// should have been one).
std::optional<AuthorizedKey> parseKeyLine(const std::string& line, bool* malformed) {
  std::istringstream in(line);
  std::string word;
  *malformed = false;
  if (!(in >> word) || word[0] == '#') return std::nullopt;
  AuthorizedKey entry;
  entry.key = word;
  if (!isValidKey(entry.key)) {
    *malformed = true;
    return std::nullopt;
  }
  std::string rest;
  std::getline(in >> std::ws, rest);
  if (rest.rfind("role=", 0) == 0) {
    const size_t end = std::min(rest.find_first_of(" \t"), rest.size());
    std::optional<Role> role = parseRole(rest.substr(5, end - 5));
    if (!role) {
      *malformed = true;
      return std::nullopt;
    }
    entry.role = *role;
    rest = end < rest.size() ? rest.substr(rest.find_first_not_of(" \t", end)) : "";
  }
  entry.comment = rest;
  return entry;
}

std::string keyLine(const AuthorizedKey& entry) {
  return entry.key + " role=" + roleName(entry.role) +
         (entry.comment.empty() ? "" : " " + entry.comment) + "\n";
}

}  // namespace

Result<std::vector<AuthorizedKey>> readAuthorizedKeys(const std::string& path,
                                                      std::vector<int>* bad_lines) {
  std::vector<AuthorizedKey> keys;
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT || !std::filesystem::exists(path)) return keys;
    return ioError("cannot read " + path + ": " + std::strerror(errno));
  }
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    bool malformed = false;
    if (auto entry = parseKeyLine(line, &malformed)) {
      keys.push_back(std::move(*entry));
    } else if (malformed && bad_lines) {
      bad_lines->push_back(number);
    }
  }
  return keys;
}

Status authorizeKey(const std::string& path, const std::string& key, Role role,
                    const std::string& comment, AuthorizeOutcome* outcome) {
  if (!isValidKey(key)) {
    return invalidArgument("'" + key + "' is not a CURVE public key (40 characters of Z85)");
  }
  AuthorizeOutcome result = AuthorizeOutcome::kAdded;
  std::string text;  // the whole file again, when a role changes
  {
    std::ifstream in(path);
    std::string line;
    while (in && std::getline(in, line)) {
      bool malformed = false;
      std::optional<AuthorizedKey> entry = parseKeyLine(line, &malformed);
      if (entry && entry->key == key && result == AuthorizeOutcome::kAdded) {
        result =
            entry->role == role ? AuthorizeOutcome::kUnchanged : AuthorizeOutcome::kRoleChanged;
        entry->role = role;
        text += keyLine(*entry);
      } else {
        text += line + "\n";
      }
    }
  }
  if (outcome) *outcome = result;
  if (result == AuthorizeOutcome::kUnchanged) return Status::ok();
  if (result == AuthorizeOutcome::kAdded) {
    return writePrivateFile(path, keyLine({key, role, comment}), true);
  }
  // Written aside and renamed over, so that the agent never reads half a file.
  const std::string temporary = path + ".tmp";
  RM_RETURN_IF_ERROR(writePrivateFile(temporary, text, false));
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    return ioError("cannot replace " + path + ": " + std::strerror(errno));
  }
  return Status::ok();
}

}  // namespace ringmaster::security

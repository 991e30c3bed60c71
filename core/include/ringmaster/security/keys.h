#pragma once
// CurveZMQ key material: key pair files (Z85, mode 0600) and authorized_keys lists.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/util/result.h"

namespace ringmaster::security {

struct KeyPair {
  std::string public_key;  // 40 characters of Z85
  std::string secret_key;
};

// A 40-character Z85 string that decodes to 32 bytes.
bool isValidKey(const std::string& key);

Result<KeyPair> generateKeyPair();

// The ranks' credential for one attempt of a job, derived from the job's key pair (which only
// the job's agents hold): a one-way hash of the job's secret key and the attempt number is the
// secret key. Every agent of the job derives the same pair; the ranks of one attempt, which get
// only their own pair, cannot derive another attempt's.
Result<KeyPair> attemptKeyPair(const KeyPair& job_keys, uint32_t attempt);

// A short, stable digest of a public key for people to compare by eye ("ab:cd:ef:12:34:56:78:9a"),
// e.g. the GUI's copy of an agent key against `ringmaster-agent pubkey` on that host. It is the
// 64-bit FNV-1a hash of the decoded key: fine for spotting a wrong paste, not a security
// boundary (an attacker can craft a key with a chosen fingerprint). Empty when `z85_key` is not
// a valid key.
std::string keyFingerprint(const std::string& z85_key);

// Reads the key pair at `path`, creating it (and its directory) when missing. The file holds
// "public KEY" and "secret KEY" lines and is created with mode 0600.
Result<KeyPair> loadOrCreateKeyPair(const std::string& path);

// Replaces the key pair at `path` with a new one; the old pair is kept at `path`.previous
// (0600), so that a rotation can be undone by hand. Returns the new pair.
Result<KeyPair> rotateKeyPair(const std::string& path);

// What an authorized client key may do on an agent. An admin may do everything; a user submits
// jobs and sees, stops, restarts and reads the logs of its own jobs only (the agent's host
// health stays visible to it).
enum class Role { kAdmin, kUser };
const char* roleName(Role role);  // "admin" | "user"
std::optional<Role> parseRole(const std::string& name);

struct AuthorizedKey {
  std::string key;
  Role role = Role::kAdmin;
  std::string comment;
};

// The keys of an authorized_keys file, one per line: "KEY [role=admin|role=user] [comment]". A
// line without a role is an admin (as every line was before roles existed); blank lines and
// lines starting with '#' are skipped. A missing file is an empty list. Malformed lines (not a
// key, an unknown role) are reported in `bad_lines` (line numbers) and skipped: a typo in a role
// never grants more than was meant.
Result<std::vector<AuthorizedKey>> readAuthorizedKeys(const std::string& path,
                                                      std::vector<int>* bad_lines = nullptr);

enum class AuthorizeOutcome { kAdded, kUnchanged, kRoleChanged };

// Adds `key` with `role` (and an optional comment), or changes the role of a key already there
// (the file is rewritten whole, atomically). The file is 0600.
Status authorizeKey(const std::string& path, const std::string& key, Role role,
                    const std::string& comment, AuthorizeOutcome* outcome = nullptr);

}  // namespace ringmaster::security

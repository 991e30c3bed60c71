#pragma once
// CurveZMQ key material: key pair files (Z85, mode 0600) and authorized_keys lists.

#include <cstdint>
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

// Keys in an authorized_keys file: one Z85 key per line, optionally followed by a comment;
// blank lines and lines starting with '#' are skipped. A missing file is an empty list.
// Malformed lines are reported in `bad_lines` (line numbers) and skipped.
Result<std::vector<std::string>> readAuthorizedKeys(const std::string& path,
                                                    std::vector<int>* bad_lines = nullptr);

// Appends `key` (with an optional comment) unless already present. The file is 0600.
// Returns false in *added when it was already there.
Status authorizeKey(const std::string& path, const std::string& key, const std::string& comment,
                    bool* added = nullptr);

}  // namespace ringmaster::security

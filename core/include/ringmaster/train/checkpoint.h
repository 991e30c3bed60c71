#pragma once
// Checkpoints of the native trainer: parameters, optimizer state, step, epoch and sampler position
// in one binary file, written atomically, and the newest complete one found again after a restart.
//
// File layout (host byte order; the header records it and a file of the other order is refused):
//   magic "RMCKPT\r\n" (8 bytes) | u32 version | u32 byte-order mark 0x01020304 |
//   u64 payload length | payload | u32 CRC-32 (IEEE) of the payload
// The payload holds step, epoch, sampler position, world size, batch size, parameter count,
// parameters, optimizer state and the parameter checksum (checked again on load).
//
// Files are named ckpt-<step, 12 digits>.rmck. saveCheckpoint() writes a hidden temporary file,
// fsyncs it, renames it into place and fsyncs the directory, so a crash leaves either the old set
// of checkpoints or the new one, never a half-written file under the final name.
//
// Thread safety: the functions share no state; concurrent saves to one directory must use
// different steps.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ringmaster/train/sampler.h"
#include "ringmaster/util/result.h"

namespace ringmaster::train {

struct CheckpointState {
  uint64_t step = 0;   // optimizer steps completed
  uint64_t epoch = 0;  // the epoch the next step draws from (= sampler.epoch)
  SamplerPosition sampler;
  // The sampler position only means the same thing with the same shard layout.
  uint32_t world_size = 1;
  uint64_t batch_size = 0;  // per rank
  std::vector<float> params;
  std::string optimizer_state;  // Optimizer::serializeState()
};

// "<dir>/ckpt-000000000120.rmck"
std::string checkpointPath(const std::string& dir, uint64_t step);

// Creates `dir` when missing and writes the checkpoint atomically (see above). With keep > 0,
// afterwards deletes all but the `keep` newest checkpoint files of the directory.
Status saveCheckpoint(const std::string& dir, const CheckpointState& state, size_t keep = 0);

// Reads and verifies one file: magic, version, byte order, length, CRC and parameter checksum.
// The error names the file and what was wrong ("truncated: 812 of 1640 payload bytes", ...).
Result<CheckpointState> readCheckpoint(const std::string& path);

struct LoadedCheckpoint {
  CheckpointState state;
  std::string path;
  // "<path>: <reason>" for each newer file that was skipped as corrupt or partial.
  std::vector<std::string> skipped;
};

// The newest valid checkpoint of `dir` (by the step in the file name); newer files that fail to
// verify are skipped and listed. kNotFound when the directory holds no valid checkpoint (or does
// not exist); the message then lists the skipped files.
Result<LoadedCheckpoint> loadLatestCheckpoint(const std::string& dir);

// FNV-1a 64 over the bytes of `params`: equal exactly when every rank holds bit-identical
// parameters. formatChecksum() gives the 16 lowercase hex digits to log and compare.
uint64_t paramChecksum(std::span<const float> params);
std::string formatChecksum(uint64_t checksum);

}  // namespace ringmaster::train

#pragma once
// Reading a Slurm job's directory (slurm/job_dir.h) where it is: on this machine, or on the
// cluster's login node through the user's own ssh (slurm/command.h), so that a laptop outside the
// cluster follows a job with nothing but ssh. Over ssh each call is one ssh command.
//
// Thread safety: none; one thread uses a JobFiles.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ringmaster/slurm/command.h"
#include "ringmaster/slurm/job_dir.h"
#include "ringmaster/util/result.h"

namespace ringmaster::slurm {

// A node's agent of one run that has started: where it journals, and how far its journal goes.
struct NodeJournal {
  std::string node_dir;  // JobDir::nodeDir(run, node)
  std::string agent;     // its name (NodeAddress::agent)
  std::string journal_id;
  uint64_t size = 0;  // bytes of journal/journal.log now
};

// Bytes [offset, offset + length) of a file.
struct FileRange {
  std::string path;
  uint64_t offset = 0;
  uint64_t length = 0;
};

class JobFiles {
 public:
  virtual ~JobFiles() = default;
  // Every node of every run whose agent has written its address and journal id.
  virtual Result<std::vector<NodeJournal>> journals(const JobDir& dir) = 0;
  // Each range's bytes. The ranges must lie inside their files (journals only grow): a file
  // shorter than that is an error.
  virtual Result<std::vector<std::string>> read(const std::vector<FileRange>& ranges) = 0;
  // The last `bytes` bytes of `path` (all of it when shorter); "" when there is no such file.
  virtual Result<std::string> tail(const std::string& path, uint64_t bytes) = 0;
  // Up to `max` bytes of each file from its offset ("" at its end, or for a missing file).
  virtual Result<std::vector<std::string>> readFrom(
      const std::vector<std::pair<std::string, uint64_t>>& files, uint64_t max) = 0;
  // Every rank log of the job: (attempt, rank) -> path; of several runs' copies, the last run's.
  virtual Result<std::map<std::pair<uint32_t, int>, std::string>> rankLogs(
      const JobDir& dir, const std::string& job_id) = 0;
};

// The job directory as `where` sees it: this machine's files when where.login is empty.
std::unique_ptr<JobFiles> jobFilesAt(const Where& where);

}  // namespace ringmaster::slurm

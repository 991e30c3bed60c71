#pragma once
// Pulls a Slurm job's journals into the history from its job directory (slurm/job_dir.h): each
// node's agent of each run keeps its journal there, so the history catches up whether the agents
// still run or are long gone, and exactly once (the store's cursors, as for any agent).
// A journal is read the way its agent writes it (protocol/journal_frame.h): a frame still being
// written is left for the next read, a frame longer than a read chunk is read whole, and a frame
// that fails its CRC with intact records after it is damage: its lost records are named in the
// history (JournalDamage, as the agent's own repair names them) and reading goes on. Over ssh a
// poll is two ssh commands: the journals' sizes, then every journal's new bytes.
//
// Not thread-safe: one thread owns a SlurmJobSync.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/protocol/ringmaster.pb.h"
#include "ringmaster/slurm/command.h"
#include "ringmaster/slurm/job_dir.h"
#include "ringmaster/slurm/job_files.h"
#include "ringmaster/slurm/job_state.h"
#include "ringmaster/store/store.h"
#include "ringmaster/util/result.h"

namespace ringmaster::client {

class SlurmJobSync {
 public:
  // Records go to the history through `writer`, the process's one writer (they are stored
  // when it flushes); cursors are read from `store`. The job directory is read where `where`
  // says: here, or on the cluster's login node over ssh.
  SlurmJobSync(slurm::JobDir dir, store::Reader* store, store::BatchWriter* writer,
               const slurm::Where& where = {});

  // Reads what the job's agents journaled since the last call and hands it to the writer.
  // `on_record` sees each new record with its agent's name. Returns how many records were new.
  Result<uint64_t> poll(
      const std::function<void(const std::string&, const proto::JournalRecord&)>& on_record = {});

 private:
  struct Reader {
    std::string agent;
    std::string journal_id;
    uint64_t offset = 0;    // bytes of journal.log read
    uint64_t next_seq = 0;  // 0: not yet known (the store's cursor decides)
    uint64_t last_seq = 0;  // the seq of the frame before `offset`
    uint64_t want = 0;      // bytes the next frame needs read at once (0: a chunk will do)
  };
  // Takes the whole frames at the start of `data` (read from reader.offset; `at_end` when it
  // reaches the end of the file) into `out`, moving reader.offset past them.
  static void takeFrames(const std::string& path, std::string_view data, bool at_end,
                         Reader& reader, std::vector<proto::JournalRecord>* out);
  void deliver(
      Reader& reader, std::vector<proto::JournalRecord> records,
      const std::function<void(const std::string&, const proto::JournalRecord&)>& on_record);

  slurm::JobDir dir_;
  store::Reader* store_;
  store::BatchWriter* writer_;
  std::unique_ptr<slurm::JobFiles> files_;
  std::map<std::string, Reader> readers_;  // by node dir
};

// How a job ended when Slurm ended it (its agents may not have lived to say so): failed or
// stopped (cancelled); nullopt while it runs, and when it completed (its journals say how).
std::optional<job::JobPhase> endedBySlurm(slurm::Phase phase);

// Asks Slurm (here, or through `where`'s login node) for the job's state and stores it in `row`
// and, through `writer`, the history; a job Slurm has finished that the history still has running
// ends there too (Store::endUnfinishedJob). A job Slurm no longer knows keeps its last state.

Result<slurm::JobState> refreshSlurmState(store::BatchWriter* writer, const slurm::Where& where,
                                          store::SlurmJobRow* row);

}  // namespace ringmaster::client

// Fuzz target for the agent's journal reader (agent/src/journal.h): one input is the bytes of a
// journal.log as a crash, a full disk or a flipped bit may leave it. Ordinary ctest runs replay
// tests/fuzz/corpus/journal; with -DRINGMASTER_FUZZ=ON (clang) it also builds as journal_fuzz.
//
// The agent must come up on any file: opening never fails on content (only on I/O), a torn tail
// is cut and damage repaired, and afterwards the journal is what clients rely on: seqs dense from
// 1 to lastSeq(), every record readable and parseable, and an append gets the next seq.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "journal.h"

namespace {

namespace fs = std::filesystem;
namespace agent = ringmaster::agent;
namespace proto = ringmaster::proto;

// A fresh directory per input, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("rm_journal_fuzz_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  TempDir dir;
  {
    std::ofstream out(dir.path / "journal.log", std::ios::binary);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    std::ofstream(dir.path / "journal.id") << "fuzz-journal";
  }
  auto journal = agent::Journal::open(dir.path.string());
  RM_FUZZ_CHECK(journal.isOk());
  const uint64_t last = (*journal)->lastSeq();
  uint64_t expected = 1;
  while (expected <= last) {
    std::vector<std::string> batch;
    RM_FUZZ_CHECK((*journal)->read(expected, 1000, 1 << 20, &batch).isOk());
    RM_FUZZ_CHECK(!batch.empty());
    for (const std::string& bytes : batch) {
      proto::JournalRecord record;
      RM_FUZZ_CHECK(record.ParseFromString(bytes));
      RM_FUZZ_CHECK(record.seq() == expected);
      ++expected;
    }
  }
  proto::JournalRecord next;
  next.set_job("after-the-fuzz");
  auto seq = (*journal)->append(next);
  RM_FUZZ_CHECK(seq.isOk() && *seq == last + 1);
  RM_FUZZ_CHECK((*journal)->flush().isOk());
  return 0;
}

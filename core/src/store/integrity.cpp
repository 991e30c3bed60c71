#include "store/integrity.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "ringmaster/store/reader.h"
#include "ringmaster/util/wall_clock.h"

namespace ringmaster::store {
namespace {

constexpr double kRecheckAfterSeconds = 3600;

// Which file, as it was when checked: the inode tells a file replaced by a recovered copy.
struct FileState {
  uint64_t device = 0, inode = 0, size = 0, mtime_ns = 0;
  bool operator==(const FileState&) const = default;
};

struct Verdict {
  FileState file;
  double checked_at = 0;
  bool sound = false;
  std::string detail;  // what quick_check said when not sound
};

std::optional<FileState> stateOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileState{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                   static_cast<uint64_t>(st.st_size),
                   static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ull +
                       static_cast<uint64_t>(st.st_mtim.tv_nsec)};
}

std::string verdictPath(const std::string& path) { return path + "-checked"; }

// "v1 DEV INO SIZE MTIME_NS CHECKED_AT sound|damaged [DETAIL]"; nullopt when absent or unreadable.
std::optional<Verdict> readVerdict(const std::string& path) {
  std::ifstream in(verdictPath(path));
  std::string version, word;
  Verdict v;
  if (!(in >> version >> v.file.device >> v.file.inode >> v.file.size >> v.file.mtime_ns >>
        v.checked_at >> word) ||
      version != "v1" || (word != "sound" && word != "damaged")) {
    return std::nullopt;
  }
  v.sound = word == "sound";
  std::getline(in >> std::ws, v.detail);
  return v;
}

// Written whole and renamed into place; a verdict that cannot be kept is only taken again.
void keepVerdict(const std::string& path, const Verdict& v) {
  const std::string temp = verdictPath(path) + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << "v1 " << v.file.device << ' ' << v.file.inode << ' ' << v.file.size << ' '
        << v.file.mtime_ns << ' ' << static_cast<int64_t>(v.checked_at) << ' '
        << (v.sound ? "sound" : "damaged") << ' ' << v.detail << '\n';
    if (!out.flush()) return;
  }
  std::rename(temp.c_str(), verdictPath(path).c_str());
}

// PRAGMA quick_check's first three findings on one line; "" when it says ok.
std::string quickCheck(sqlite3* db) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, "PRAGMA quick_check(3)", -1, &stmt, nullptr) != SQLITE_OK) {
    return sqlite3_errmsg(db);
  }
  std::string findings;
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    const std::string line = text ? text : "";
    if (line == "ok") continue;
    findings += (findings.empty() ? "" : "; ") + line;
  }
  if (rc != SQLITE_DONE)
    findings += (findings.empty() ? "" : "; ") + std::string(sqlite3_errmsg(db));
  sqlite3_finalize(stmt);
  for (char& c : findings) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return findings;
}

std::string damageSentence(const std::string& path, const std::string& detail) {
  return "the history file " + path + " is damaged (SQLite: " + detail +
         "): what it shows may be incomplete. Keep a copy, recover what is readable with "
         "`sqlite3 " +
         path + " .recover | sqlite3 " + path +
         ".recovered` (Debian package sqlite3), use that file (--db or RINGMASTER_DB), and "
         "`ringmasterctl sync` pulls again what the agents still have";
}

// The file `db` has open, as SQLite names it (absolute): one key per file, however it was opened.
std::string fileOf(sqlite3* db) {
  const char* file = sqlite3_db_filename(db, "main");
  return file == nullptr ? "" : file;
}

// Per file, this process's answer: checked once.
std::mutex verdicts_mutex;
std::map<std::string, std::string>& verdicts() {
  static std::map<std::string, std::string> found;  // path -> damage sentence, "" when sound
  return found;
}

}  // namespace

std::string checkedDamage(sqlite3* db) {
  const std::string path = fileOf(db);
  if (path.empty()) return "";
  std::lock_guard lock(verdicts_mutex);
  if (auto it = verdicts().find(path); it != verdicts().end()) return it->second;
  const std::optional<FileState> now = stateOf(path);
  const std::optional<Verdict> kept = readVerdict(path);
  Verdict verdict;
  if (now && kept && kept->file.device == now->device && kept->file.inode == now->inode &&
      ((kept->sound && unixSeconds() - kept->checked_at < kRecheckAfterSeconds) ||
       (!kept->sound && kept->file == *now))) {
    verdict = *kept;
  } else {
    verdict.detail = quickCheck(db);
    verdict.sound = verdict.detail.empty();
    verdict.checked_at = unixSeconds();
    if (now) {
      verdict.file = *now;
      keepVerdict(path, verdict);
    }
  }
  return verdicts()[path] = verdict.sound ? "" : damageSentence(path, verdict.detail);
}

void noteDamage(sqlite3* db, const std::string& detail) {
  const std::string path = fileOf(db);
  if (path.empty()) return;
  std::lock_guard lock(verdicts_mutex);
  verdicts()[path] = damageSentence(path, detail);
  if (const std::optional<FileState> now = stateOf(path)) {
    keepVerdict(path,
                {.file = *now, .checked_at = unixSeconds(), .sound = false, .detail = detail});
  }
}

std::vector<std::string> damagedHistories() {
  std::lock_guard lock(verdicts_mutex);
  std::vector<std::string> found;
  for (const auto& [path, damage] : verdicts()) {
    if (!damage.empty()) found.push_back(damage);
  }
  return found;
}

}  // namespace ringmaster::store

#include "ringmaster/slurm/job_files.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace ringmaster::slurm {
namespace {

constexpr int kRemoteTimeoutMs = 30000;

std::string firstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// (attempt, rank) -> path of the paths that are .../attempt-A/rank-R.log, the later of two
// copies (a later run's: `paths` come in run order).
std::map<std::pair<uint32_t, int>, std::string> rankLogsOf(const std::vector<std::string>& paths) {
  std::map<std::pair<uint32_t, int>, std::string> logs;
  for (const std::string& path : paths) {
    const size_t attempt = path.rfind("/attempt-");
    const size_t rank = path.rfind("/rank-");
    if (attempt == std::string::npos || rank == std::string::npos || rank < attempt ||
        path.size() < 4 || path.compare(path.size() - 4, 4, ".log") != 0) {
      continue;
    }
    char* end = nullptr;
    const unsigned long a = std::strtoul(path.c_str() + attempt + 9, &end, 10);
    if (end != path.c_str() + rank) continue;
    const long r = std::strtol(path.c_str() + rank + 6, &end, 10);
    if (end != path.c_str() + path.size() - 4) continue;
    logs[{static_cast<uint32_t>(a), static_cast<int>(r)}] = path;
  }
  return logs;
}

class LocalJobFiles : public JobFiles {
 public:
  Result<std::vector<NodeJournal>> journals(const JobDir& dir) override {
    std::vector<NodeJournal> found;
    for (int run : dir.runs()) {
      for (int node : dir.nodes(run)) {
        NodeJournal journal;
        journal.node_dir = dir.nodeDir(run, node);
        auto address = readNodeAddress(dir.addressFile(run, node));
        journal.journal_id = firstLine(journal.node_dir + "/journal/journal.id");
        if (!address.isOk() || journal.journal_id.empty()) continue;  // not started yet
        journal.agent = address->agent;
        std::error_code ec;
        const auto size = std::filesystem::file_size(journal.node_dir + "/journal/journal.log", ec);
        journal.size = ec ? 0 : size;
        found.push_back(std::move(journal));
      }
    }
    return found;
  }

  Result<std::vector<std::string>> read(const std::vector<FileRange>& ranges) override {
    std::vector<std::string> out;
    for (const FileRange& range : ranges) {
      std::ifstream in(range.path, std::ios::binary);
      std::string data(range.length, '\0');
      in.seekg(static_cast<std::streamoff>(range.offset));
      in.read(data.data(), static_cast<std::streamsize>(data.size()));
      if (!in || static_cast<uint64_t>(in.gcount()) != range.length) {
        return ioError("cannot read " + std::to_string(range.length) + " bytes of " + range.path +
                       " from byte " + std::to_string(range.offset));
      }
      out.push_back(std::move(data));
    }
    return out;
  }

  Result<std::string> tail(const std::string& path, uint64_t bytes) override {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) return std::string();
    const auto size = static_cast<uint64_t>(in.tellg());
    const uint64_t from = size > bytes ? size - bytes : 0;
    std::string data(size - from, '\0');
    in.seekg(static_cast<std::streamoff>(from));
    in.read(data.data(), static_cast<std::streamsize>(data.size()));
    data.resize(static_cast<size_t>(in.gcount()));
    return data;
  }

  Result<std::vector<std::string>> readFrom(
      const std::vector<std::pair<std::string, uint64_t>>& files, uint64_t max) override {
    std::vector<std::string> out;
    for (const auto& [path, offset] : files) {
      std::ifstream in(path, std::ios::binary);
      std::string data(max, '\0');
      in.seekg(static_cast<std::streamoff>(offset));
      in.read(data.data(), static_cast<std::streamsize>(data.size()));
      data.resize(in.gcount() > 0 ? static_cast<size_t>(in.gcount()) : 0);
      out.push_back(std::move(data));
    }
    return out;
  }

  Result<std::map<std::pair<uint32_t, int>, std::string>> rankLogs(
      const JobDir& dir, const std::string& job_id) override {
    std::vector<std::string> paths;
    for (int run : dir.runs()) {
      for (int node : dir.nodes(run)) {
        std::error_code ec;
        const std::string job_dir = dir.nodeDir(run, node) + "/jobs/" + job_id;
        for (const auto& attempt : std::filesystem::directory_iterator(job_dir, ec)) {
          for (const auto& file : std::filesystem::directory_iterator(attempt.path(), ec)) {
            paths.push_back(file.path().string());
          }
        }
      }
    }
    return rankLogsOf(paths);
  }
};

// Each call one `sh -c SCRIPT sh ARGS...` on the login node: the arguments travel as positional
// parameters, so no path is ever spliced into the script.
class RemoteJobFiles : public JobFiles {
 public:
  explicit RemoteJobFiles(Where where) : where_(std::move(where)) {}

  Result<std::vector<NodeJournal>> journals(const JobDir& dir) override {
    static const char* const kScript = R"(cd "$1" 2>/dev/null || exit 0
for d in run-*/node-*; do
  [ -f "$d/address" ] && [ -f "$d/journal/journal.id" ] || continue
  a=$(sed -n 's/^agent //p' "$d/address"); i=$(head -n 1 "$d/journal/journal.id")
  s=$(stat -c %s "$d/journal/journal.log" 2>/dev/null || echo 0)
  [ -n "$a" ] && [ -n "$i" ] && printf '%s\t%s\t%s\t%s\n' "$d" "$a" "$i" "$s"
done)";
    RM_ASSIGN_OR_RETURN(std::string out, run(kScript, {dir.root}));
    std::vector<NodeJournal> found;
    for (const std::string& line : lines(out)) {
      std::vector<std::string> fields;
      for (size_t from = 0;;) {
        const size_t tab = line.find('\t', from);
        fields.push_back(line.substr(from, tab - from));
        if (tab == std::string::npos) break;
        from = tab + 1;
      }
      if (fields.size() != 4) continue;
      found.push_back({dir.root + "/" + fields[0], fields[1], fields[2],
                       std::strtoull(fields[3].c_str(), nullptr, 10)});
    }
    return found;
  }

  Result<std::vector<std::string>> read(const std::vector<FileRange>& ranges) override {
    static const char* const kScript = R"(while [ $# -gt 0 ]; do
  tail -c +$(($2 + 1)) "$1" | head -c "$3"; shift 3
done)";
    std::vector<std::string> args;
    uint64_t total = 0;
    for (const FileRange& range : ranges) {
      args.insert(args.end(),
                  {range.path, std::to_string(range.offset), std::to_string(range.length)});
      total += range.length;
    }
    if (ranges.empty()) return std::vector<std::string>{};
    RM_ASSIGN_OR_RETURN(std::string out, run(kScript, args));
    if (out.size() != total) {
      return ioError("read " + std::to_string(out.size()) + " of " + std::to_string(total) +
                     " bytes of the job's journals on " + where_.login +
                     " (a file is shorter than it was a moment ago)");
    }
    std::vector<std::string> parts;
    size_t at = 0;
    for (const FileRange& range : ranges) {
      parts.push_back(out.substr(at, range.length));
      at += range.length;
    }
    return parts;
  }

  Result<std::string> tail(const std::string& path, uint64_t bytes) override {
    return run(R"(tail -c "$2" "$1" 2>/dev/null || true)", {path, std::to_string(bytes)});
  }

  Result<std::vector<std::string>> readFrom(
      const std::vector<std::pair<std::string, uint64_t>>& files, uint64_t max) override {
    if (files.empty()) return std::vector<std::string>{};
    // Each file's bytes after their count on a line of its own.
    static const char* const kScript = R"(t=$(mktemp) || exit 1
trap 'rm -f "$t"' EXIT
max=$1; shift
while [ $# -gt 0 ]; do
  tail -c +$(($2 + 1)) "$1" 2>/dev/null | head -c "$max" >"$t"; wc -c <"$t"; cat "$t"; shift 2
done)";
    std::vector<std::string> args = {std::to_string(max)};
    for (const auto& [path, offset] : files)
      args.insert(args.end(), {path, std::to_string(offset)});
    RM_ASSIGN_OR_RETURN(std::string out, run(kScript, args));
    std::vector<std::string> parts;
    size_t at = 0;
    for (size_t i = 0; i < files.size(); ++i) {
      const size_t newline = out.find('\n', at);
      if (newline == std::string::npos) return ioError("a short answer from " + where_.login);
      const uint64_t count = std::strtoull(out.c_str() + at, nullptr, 10);
      if (newline + 1 + count > out.size()) return ioError("a short answer from " + where_.login);
      parts.push_back(out.substr(newline + 1, count));
      at = newline + 1 + count;
    }
    return parts;
  }

  Result<std::map<std::pair<uint32_t, int>, std::string>> rankLogs(
      const JobDir& dir, const std::string& job_id) override {
    RM_ASSIGN_OR_RETURN(
        std::string out,
        run(R"(ls -d "$1"/run-*/node-*/jobs/"$2"/attempt-*/rank-*.log 2>/dev/null; true)",
            {dir.root, job_id}));
    const std::vector<std::string> paths = lines(out);
    return rankLogsOf(paths);
  }

 private:
  Result<std::string> run(const std::string& script, const std::vector<std::string>& args) {
    return runScript(script, args, where_, kRemoteTimeoutMs);
  }

  Where where_;
};

}  // namespace

std::unique_ptr<JobFiles> jobFilesAt(const Where& where) {
  if (where.login.empty()) return std::make_unique<LocalJobFiles>();
  return std::make_unique<RemoteJobFiles>(where);
}

}  // namespace ringmaster::slurm

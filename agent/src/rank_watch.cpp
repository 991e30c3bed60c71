#include "rank_watch.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace ringmaster::agent {

std::vector<std::string> lastLines(const std::string& path, size_t count) {
  constexpr off_t kTail = 16 * 1024;
  // The rank may have replaced its log with a link (to the agent's key) or a FIFO: neither is
  // followed or waited on, and its words go into the journal and the history.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return {};
  }
  const off_t start = st.st_size > kTail ? st.st_size - kTail : 0;
  std::string text(static_cast<size_t>(st.st_size - start), '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), start);
  ::close(fd);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  std::vector<std::string> lines;
  std::istringstream stream(text);
  std::string line;
  bool first = start > 0;  // a cut first line is dropped
  while (std::getline(stream, line)) {
    if (first) {
      first = false;
      continue;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > 400) line = line.substr(0, 400) + "…";
    lines.push_back(std::move(line));
  }
  if (lines.size() > count) lines.erase(lines.begin(), lines.end() - static_cast<long>(count));
  return lines;
}

proto::JobFailure describeRankFailure(const proto::RankExited& exited, const std::string& agent,
                                      int64_t step, const std::string& log_path) {
  proto::JobFailure failure;
  failure.set_rank(exited.rank());
  failure.set_agent(agent);
  failure.set_exit_code(exited.exit_code());
  failure.set_signal(exited.signal());
  failure.set_step(step);
  std::string cause = "rank " + std::to_string(exited.rank()) + " on " + agent;
  // A rank that never started is journaled with code 127 and why; a rank that ran may carry an
  // error too: what killed it (its memory limit) or the exception it recorded (@record).
  const bool never_started =
      !exited.error().empty() && exited.exit_code() == 127 && exited.signal() == 0;
  if (never_started) {
    failure.set_kind("launch");
    cause += " could not start: " + exited.error();
  } else {
    if (exited.signal() != 0) {
      failure.set_kind("signalled");
      const char* name = ::sigabbrev_np(exited.signal());
      cause += " was killed by signal " + std::to_string(exited.signal()) +
               (name ? std::string(" (SIG") + name + ")" : "");
    } else {
      failure.set_kind("exited");
      cause += " exited with code " + std::to_string(exited.exit_code());
    }
    if (step >= 0) cause += " at step " + std::to_string(step);
    if (!exited.error().empty()) cause += ": " + exited.error();
  }
  failure.set_cause(cause);
  for (auto& line : lastLines(log_path, 10)) failure.add_last_lines(std::move(line));
  return failure;
}

ProcSample sampleProc(pid_t pid) {
  ProcSample sample;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return sample;
  // "pid (comm) state ppid ..." — comm may hold spaces and parentheses: parse after the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return sample;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  std::vector<std::string> values;
  while (fields >> field && values.size() < 13) values.push_back(field);
  if (values.size() < 13) return sample;
  sample.state = values[0][0];
  // Fields 14 and 15 of the whole line (utime, stime) are 11 and 12 after the state.
  sample.cpu_ticks = std::stoull(values[11]) + std::stoull(values[12]);
  sample.valid = true;
  return sample;
}

std::string activityOf(const ProcSample& now, uint64_t previous_ticks, double seconds) {
  if (!now.valid) return "gone";
  if (now.state == 'T' || now.state == 't') return "stopped (SIGSTOP or a debugger)";
  static const double ticks_per_second = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double busy =
      seconds > 0 && now.cpu_ticks >= previous_ticks
          ? static_cast<double>(now.cpu_ticks - previous_ticks) / ticks_per_second / seconds
          : 0;
  return busy >= 0.5 ? "computing" : "waiting";
}

}  // namespace ringmaster::agent

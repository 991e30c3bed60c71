#include "ringmaster/slurm/job_state.h"

#include <array>
#include <optional>
#include <utility>

namespace ringmaster::slurm {
namespace {

struct StateName {
  std::string_view name;
  std::string_view code;  // squeue's %t
  Phase phase;
};

// Slurm's job state codes (man squeue, "JOB STATE CODES"), 22.05 to 25.05.
constexpr std::array<StateName, 24> kStates{{
    {"BOOT_FAIL", "BF", Phase::kFailed},      {"CANCELLED", "CA", Phase::kCancelled},
    {"COMPLETED", "CD", Phase::kCompleted},   {"CONFIGURING", "CF", Phase::kPending},
    {"COMPLETING", "CG", Phase::kCompleting}, {"DEADLINE", "DL", Phase::kTimedOut},
    {"FAILED", "F", Phase::kFailed},          {"NODE_FAIL", "NF", Phase::kNodeFailure},
    {"OUT_OF_MEMORY", "OOM", Phase::kFailed}, {"PENDING", "PD", Phase::kPending},
    {"PREEMPTED", "PR", Phase::kPreempted},   {"RUNNING", "R", Phase::kRunning},
    {"RESV_DEL_HOLD", "RD", Phase::kPending}, {"REQUEUE_FED", "RF", Phase::kPending},
    {"REQUEUE_HOLD", "RH", Phase::kPending},  {"REQUEUED", "RQ", Phase::kPending},
    {"RESIZING", "RS", Phase::kRunning},      {"REVOKED", "RV", Phase::kCancelled},
    {"SIGNALING", "SI", Phase::kRunning},     {"SPECIAL_EXIT", "SE", Phase::kFailed},
    {"STAGE_OUT", "SO", Phase::kRunning},     {"STOPPED", "ST", Phase::kSuspended},
    {"SUSPENDED", "S", Phase::kSuspended},    {"TIMEOUT", "TO", Phase::kTimedOut},
}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::vector<std::string_view> split(std::string_view s, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == separator) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

// Slurm writes "None" (squeue, scontrol) or nothing (sacct) for no reason.
std::string reasonOf(std::string_view reason) {
  reason = trim(reason);
  return reason == "None" || reason == "(null)" ? std::string() : std::string(reason);
}

JobState makeState(std::string_view id, std::string_view state, std::string_view reason,
                   std::string_view exit_code) {
  JobState job;
  job.job_id = std::string(trim(id));
  job.slurm_state = std::string(trim(state));
  job.phase = phaseOf(job.slurm_state);
  job.reason = reasonOf(reason);
  job.exit_code = std::string(trim(exit_code));
  return job;
}

// Runs `parse_line` on every non-empty line; an error names the line.
template <typename ParseLine>
Result<std::vector<JobState>> parseLines(std::string_view text, const char* what,
                                         ParseLine parse_line) {
  std::vector<JobState> jobs;
  int number = 0;
  for (std::string_view line : split(text, '\n')) {
    ++number;
    line = trim(line);
    if (line.empty()) continue;
    Result<std::optional<JobState>> job = parse_line(line);
    if (!job.isOk()) {
      return invalidArgument(std::string(what) + " line " + std::to_string(number) + ": " +
                             job.status().message() + ": '" + std::string(line) + "'");
    }
    if (*job) jobs.push_back(std::move(**job));
  }
  return jobs;
}

bool isKeyStart(std::string_view token) {
  const size_t equals = token.find('=');
  if (equals == std::string_view::npos || equals == 0) return false;
  for (char c : token.substr(0, equals)) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '/' || c == ':' || c == '-';
    if (!ok) return false;
  }
  return token[0] >= 'A' && token[0] <= 'Z';
}

}  // namespace

const char* phaseName(Phase phase) {
  switch (phase) {
    case Phase::kPending:
      return "pending";
    case Phase::kRunning:
      return "running";
    case Phase::kCompleting:
      return "completing";
    case Phase::kSuspended:
      return "suspended";
    case Phase::kCompleted:
      return "completed";
    case Phase::kFailed:
      return "failed";
    case Phase::kCancelled:
      return "cancelled";
    case Phase::kPreempted:
      return "preempted";
    case Phase::kTimedOut:
      return "timed out";
    case Phase::kNodeFailure:
      return "node failure";
    case Phase::kUnknown:
      break;
  }
  return "unknown";
}

bool isFinished(Phase phase) {
  switch (phase) {
    case Phase::kCompleted:
    case Phase::kFailed:
    case Phase::kCancelled:
    case Phase::kPreempted:
    case Phase::kTimedOut:
    case Phase::kNodeFailure:
      return true;
    default:
      return false;
  }
}

Phase phaseOf(std::string_view slurm_state) {
  slurm_state = trim(slurm_state);
  // sacct adds who cancelled ("CANCELLED by 1000"); newer releases may add flags after a space.
  slurm_state = slurm_state.substr(0, slurm_state.find(' '));
  for (const auto& state : kStates) {
    if (slurm_state == state.name || slurm_state == state.code) return state.phase;
  }
  return Phase::kUnknown;
}

Result<std::vector<JobState>> parseSqueue(std::string_view text) {
  return parseLines(text, "squeue", [](std::string_view line) -> Result<std::optional<JobState>> {
    const auto fields = split(line, '|');
    if (fields.size() != 3) {
      return invalidArgument("expected 3 fields (%i|%T|%r), got " + std::to_string(fields.size()));
    }
    if (trim(fields[0]).empty()) return invalidArgument("no job id");
    return std::optional<JobState>(makeState(fields[0], fields[1], fields[2], ""));
  });
}

Result<std::vector<JobState>> parseSacct(std::string_view text) {
  return parseLines(text, "sacct", [](std::string_view line) -> Result<std::optional<JobState>> {
    const auto fields = split(line, '|');
    if (fields.size() != 4) {
      return invalidArgument("expected 4 fields (JobID|State|ExitCode|Reason), got " +
                             std::to_string(fields.size()));
    }
    const std::string_view id = trim(fields[0]);
    if (id.empty()) return invalidArgument("no job id");
    if (id.find('.') != std::string_view::npos) return std::optional<JobState>();  // a step
    return std::optional<JobState>(makeState(id, fields[1], fields[3], fields[2]));
  });
}

Result<JobState> parseScontrolJob(std::string_view line) {
  line = trim(line);
  std::vector<std::pair<std::string_view, std::string>> pairs;
  for (std::string_view token : split(line, ' ')) {
    if (token.empty()) continue;
    if (isKeyStart(token)) {
      const size_t equals = token.find('=');
      pairs.emplace_back(token.substr(0, equals), std::string(token.substr(equals + 1)));
    } else if (!pairs.empty()) {
      pairs.back().second += " " + std::string(token);  // a value with spaces
    } else {
      return invalidArgument("scontrol: expected Key=Value pairs, got '" + std::string(line) + "'");
    }
  }
  auto value = [&](std::string_view key) -> const std::string* {
    for (const auto& [k, v] : pairs) {
      if (k == key) return &v;
    }
    return nullptr;
  };
  const std::string* id = value("JobId");
  const std::string* state = value("JobState");
  // A value of nothing but carriage returns is empty too (makeState trims them).
  if (!id || !state || trim(*id).empty() || trim(*state).empty()) {
    return invalidArgument("scontrol: no JobId or JobState in '" + std::string(line) + "'");
  }
  const std::string* reason = value("Reason");
  const std::string* exit_code = value("ExitCode");
  return makeState(*id, *state, reason ? *reason : "", exit_code ? *exit_code : "");
}

}  // namespace ringmaster::slurm

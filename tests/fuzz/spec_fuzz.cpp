// Fuzz target for the job spec parser (libFuzzer entry point): one input is the text of a job file.
// Ordinary ctest runs replay tests/fuzz/corpus/spec through replay_main.cpp; with
// -DRINGMASTER_FUZZ=ON (clang) it also builds as spec_fuzz.
//
// Besides "no crash, no exception, no out-of-bounds read", it checks what job/spec.h promises of
// the result: a spec exactly when there are no diagnostics, and a spec that keeps every rule the
// parser documents (the agent relies on them: its metric patterns compile, its env names are not
// reserved, ...).

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_check.h"
#include "ringmaster/job/spec.h"
#include "ringmaster/metrics/line_parser.h"

namespace {

namespace job = ringmaster::job;

bool isJobName(const std::string& name) {
  return !name.empty() && name.size() <= 64 &&
         std::all_of(name.begin(), name.end(), [](unsigned char c) {
           return std::isalnum(c) || c == '.' || c == '_' || c == '-';
         });
}

bool isEnvName(const std::string& name) {
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

void checkSpec(const job::JobSpec& spec, std::string_view text) {
  RM_FUZZ_CHECK(spec.text == text);
  RM_FUZZ_CHECK(spec.file == "fuzz.yaml");
  RM_FUZZ_CHECK(isJobName(spec.name));
  if (spec.launcher == job::Launcher::kNative) {
    RM_FUZZ_CHECK(!spec.native_yaml.empty());
  } else {
    RM_FUZZ_CHECK(spec.native_yaml.empty());
    RM_FUZZ_CHECK(!spec.command.empty());
  }
  RM_FUZZ_CHECK(spec.workdir.empty() || spec.workdir[0] == '/');
  for (const auto& [name, value] : spec.env) {
    RM_FUZZ_CHECK(isEnvName(name));
    RM_FUZZ_CHECK(!job::isReservedEnvName(name));
  }
  RM_FUZZ_CHECK(spec.world_size >= 1);
  if (!spec.placement.empty()) {
    RM_FUZZ_CHECK(spec.world_size_line == 0);
    int64_t total = 0;
    for (const job::PlacementEntry& entry : spec.placement) {
      RM_FUZZ_CHECK(!entry.agent.empty());
      RM_FUZZ_CHECK(entry.ranks >= 1);
      total += entry.ranks;
    }
    RM_FUZZ_CHECK(total == spec.world_size);
  }
  RM_FUZZ_CHECK(spec.restart.max_restarts >= 0);
  RM_FUZZ_CHECK(spec.restart.min_nodes >= 0);
  RM_FUZZ_CHECK(spec.restart.backoff_seconds >= 0);
  RM_FUZZ_CHECK(spec.restart.hang_timeout_seconds >= 0);
  RM_FUZZ_CHECK(spec.restart.rejoin_timeout_seconds >= 0);
  RM_FUZZ_CHECK(spec.stop_grace_seconds >= 0);
  // The agent compiles the patterns when it launches the job: what the spec check passes must
  // compile there.
  std::vector<std::pair<std::string, std::string>> patterns;
  for (const job::MetricPatternSpec& p : spec.metric_patterns) {
    RM_FUZZ_CHECK(!p.name.empty());
    patterns.emplace_back(p.name, p.regex);
  }
  RM_FUZZ_CHECK(ringmaster::metrics::PatternMatcher::compile(patterns).isOk());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copy into a buffer of exactly `size` bytes so that ASan catches any read past the end.
  const std::string input(reinterpret_cast<const char*>(data), size);
  const job::SpecParseResult result = job::parseJobSpec(input, "fuzz.yaml");
  RM_FUZZ_CHECK(result.spec.has_value() == result.errors.empty());
  RM_FUZZ_CHECK(result.ok() == result.errors.empty());
  if (result.spec) checkSpec(*result.spec, input);
  for (const job::SpecDiagnostic& d : result.errors) {
    RM_FUZZ_CHECK(d.file == "fuzz.yaml");
    RM_FUZZ_CHECK(!d.message.empty());
    RM_FUZZ_CHECK(d.line >= 0 && d.column >= 0);
  }
  const std::string report = job::formatDiagnostics(result.errors);
  RM_FUZZ_CHECK(std::count(report.begin(), report.end(), '\n') >=
                static_cast<std::ptrdiff_t>(result.errors.size()));
  return 0;
}

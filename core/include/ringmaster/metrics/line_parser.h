#pragma once
// Metric records from a rank's stdout: JSON metric lines and regex patterns for unmodified scripts.
// Both run on every stdout line, so they reject non-matching lines cheaply and never throw.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ringmaster/util/result.h"

namespace re2 {
class RE2;
}

namespace ringmaster::metrics {

// Limits of a JSON metric line; a line over either limit is not a metric record.
inline constexpr size_t kMaxMetricKeys = 256;      // keys per line, "step" included
inline constexpr size_t kMaxMetricKeyBytes = 128;  // bytes of one key after unescaping (UTF-8)
// Lines longer than this are not offered to regex patterns.
inline constexpr size_t kMaxPatternLineBytes = 4096;

// A metric of this name marks a checkpoint saved at its step (its value is not read): the native
// worker prints {"step": N, "checkpoint": 1} after each save, and a script may do the same.
// Dashboards show it as an event, not as a chart.
inline constexpr const char* kCheckpointMetric = "checkpoint";
// On the same line, how long training stood still for that save, in seconds (the native
// workers print it; they write on a thread of their own, so it is the copy of the state and any
// wait for the save before): the dashboard's checkpoint economics read it; no chart shows it.
inline constexpr const char* kCheckpointSecondsMetric = "checkpoint_seconds";

struct ParsedMetrics {
  std::optional<int64_t> step;
  // In the order they appear in the line; names are unique, non-empty, valid UTF-8 and never
  // "step"; values may be NaN or infinite (a diverging loss is data).
  std::vector<std::pair<std::string, double>> values;
};

// A metrics line is a flat JSON object whose values are all JSON numbers, with optional JSON
// whitespace around it, e.g. {"step": 10, "loss": 0.31, "lr": 1e-3}. "step" must be an integer
// value (10, 1e3 or 10.0) within int64 and becomes .step instead of a value. Values may also be
// NaN, Infinity or -Infinity, as Python's json.dumps writes them. Returns nullopt for
// anything else: not an object, nested objects or arrays, strings, true/false/null, a non-finite
// step, numbers outside the range of a double (1e400, and also 1e-400, which no encoder
// prints), duplicate keys (compared after unescaping), more than kMaxMetricKeys keys, trailing
// garbage, an object without any value besides "step" (nothing to record), or a bad key: empty,
// longer than kMaxMetricKeyBytes, not valid UTF-8, or holding a control character (raw or escaped,
// so \b \f \n \r \t and \u0000-\u001f are rejected). Keys may use the escapes \" \\ \/ and
// \uXXXX (surrogate pairs combined, lone surrogates rejected).
// Thread-safe; never throws; reads only inside `line`.
std::optional<ParsedMetrics> parseJsonMetricLine(std::string_view line);

// Regex patterns from a job spec, for scripts that print e.g. "epoch 3 loss=0.25". They are RE2
// (https://github.com/google/re2/wiki/Syntax): matching takes time linear in the line whatever
// the pattern, so no job's pattern can stall the agent that parses its output (std::regex took
// 25 s for `(\d+)*z` on 28 digits). No backreferences or lookaround.
// Immutable after compile(): match() may be called from several threads at once.
// OK when `regex` compiles and has a capture group; else INVALID_ARGUMENT saying why.
Status checkMetricPattern(const std::string& regex);

class PatternMatcher {
 public:
  // An empty matcher: match() always returns nullopt.
  PatternMatcher() = default;

  // Each pattern is (metric name, RE2 regex whose capture group 1 holds the number);
  // name "step" sets the step. A name that appears more than once is allowed: the first pattern
  // that matches a line wins. An empty name, an invalid regex or a regex without a capture group
  // gives INVALID_ARGUMENT naming the pattern.
  static Result<PatternMatcher> compile(
      const std::vector<std::pair<std::string, std::string>>& patterns);

  // Searches `line` with every pattern. Group 1 must be a whole decimal number (a leading '+'
  // is allowed; "inf"/"nan" are not); for "step" an integer value. A pattern whose group is not
  // such a number counts as not matching. Returns nullopt when no pattern other than "step"
  // matched, or when the line is longer than kMaxPatternLineBytes. Never throws.
  std::optional<ParsedMetrics> match(std::string_view line) const;

  bool empty() const { return patterns_.empty(); }

 private:
  struct Pattern {
    std::string name;
    std::shared_ptr<const re2::RE2> regex;  // immutable: copies of the matcher share it
  };
  std::vector<Pattern> patterns_;
};

}  // namespace ringmaster::metrics

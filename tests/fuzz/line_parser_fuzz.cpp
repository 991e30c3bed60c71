// Fuzz target for the metric line decoders (libFuzzer entry point). Ordinary ctest runs replay the
// corpus in tests/fuzz/corpus/line_parser through replay_main.cpp; with clang it also builds as
//   clang++ -std=c++20 -g -fsanitize=fuzzer,address,undefined -Icore/include
//   -I<build>/core/generated
//     tests/fuzz/line_parser_fuzz.cpp core/src/metrics/line_parser.cpp core/src/util/result.cpp
// Besides "no crash, no out-of-bounds read", it checks the documented guarantees of a parsed line
// and that printing it back as JSON parses to the same record. The whole input is also matched
// against fixed RE2 patterns; and an input with a line break is read as PATTERN\nLINE too: the
// pattern, as a job spec could give it, is compiled and the rest is matched against it.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "ringmaster/metrics/line_parser.h"

namespace {

using ringmaster::metrics::ParsedMetrics;

void checkRecord(const ParsedMetrics& m, bool from_json) {
  RM_FUZZ_CHECK(!m.values.empty());
  RM_FUZZ_CHECK(m.values.size() <= ringmaster::metrics::kMaxMetricKeys);
  for (size_t i = 0; i < m.values.size(); ++i) {
    const std::string& name = m.values[i].first;
    RM_FUZZ_CHECK(!name.empty());
    RM_FUZZ_CHECK(name != "step");
    if (from_json) RM_FUZZ_CHECK(name.size() <= ringmaster::metrics::kMaxMetricKeyBytes);
    for (size_t j = i + 1; j < m.values.size(); ++j) RM_FUZZ_CHECK(m.values[j].first != name);
  }
}

// Equal values, NaN equal to NaN (a parsed NaN must come back as NaN).
bool sameValues(const ParsedMetrics& a, const ParsedMetrics& b) {
  if (a.values.size() != b.values.size()) return false;
  for (size_t i = 0; i < a.values.size(); ++i) {
    const auto& [name_a, value_a] = a.values[i];
    const auto& [name_b, value_b] = b.values[i];
    if (name_a != name_b) return false;
    if (!(value_a == value_b || (std::isnan(value_a) && std::isnan(value_b)))) return false;
  }
  return true;
}

std::string toJson(const ParsedMetrics& m) {
  std::string out = "{";
  if (m.step) out += "\"step\":" + std::to_string(*m.step) + ",";
  for (const auto& [name, value] : m.values) {
    out += '"';
    for (char c : name) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    char number[40];
    std::snprintf(number, sizeof(number), "%.17g", value);
    out += "\":";
    // Non-finite values as Python's json.dumps writes them.
    out += std::isnan(value)   ? "NaN"
           : std::isinf(value) ? (value > 0 ? "Infinity" : "-Infinity")
                               : number;
    out += ',';
  }
  out.back() = '}';
  return out;
}

const ringmaster::metrics::PatternMatcher& matcher() {
  static const auto* m = new ringmaster::metrics::PatternMatcher(
      *ringmaster::metrics::PatternMatcher::compile({{"step", R"(step[ =:]+(\S+))"},
                                                     {"loss", R"(loss[ =:]+([^ ,]*))"},
                                                     {"lr", R"(lr=(\d*\.?\d*(?:e-?\d+)?))"}}));
  return *m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copy into a buffer of exactly `size` bytes so that ASan catches any read past the end.
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string_view line(input);

  if (auto m = ringmaster::metrics::parseJsonMetricLine(line)) {
    checkRecord(*m, /*from_json=*/true);
    auto again = ringmaster::metrics::parseJsonMetricLine(toJson(*m));
    RM_FUZZ_CHECK(again.has_value());
    RM_FUZZ_CHECK(again->step == m->step);
    RM_FUZZ_CHECK(sameValues(*again, *m));
  }
  if (auto m = matcher().match(line)) checkRecord(*m, /*from_json=*/false);

  if (const size_t newline = line.find('\n'); newline != std::string_view::npos) {
    const std::string regex(line.substr(0, newline));
    const std::string_view rest = line.substr(newline + 1);
    const bool valid = ringmaster::metrics::checkMetricPattern(regex).isOk();
    auto compiled =
        ringmaster::metrics::PatternMatcher::compile({{"value", regex}, {"step", regex}});
    RM_FUZZ_CHECK(compiled.isOk() == valid);
    if (compiled.isOk()) {
      RM_FUZZ_CHECK(!compiled->empty());
      if (auto m = compiled->match(rest)) {
        checkRecord(*m, /*from_json=*/false);
        RM_FUZZ_CHECK(m->values.size() == 1 && m->values[0].first == "value");
      }
    } else {
      RM_FUZZ_CHECK(!compiled.status().message().empty());
    }
  }
  return 0;
}

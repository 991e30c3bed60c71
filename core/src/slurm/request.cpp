#include "ringmaster/slurm/request.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>

#include "ringmaster/util/closest_match.h"
#include "ringmaster/util/yaml_node.h"

namespace ringmaster::slurm {
namespace {

struct IntRange {
  int min;
  int max;
};

constexpr IntRange kNodes{1, 100000};
constexpr IntRange kRanksPerNode{1, 1024};
constexpr IntRange kGpusPerNode{0, 1024};

using yaml::describe;
using yaml::Location;
using yaml::locationOf;
using yaml::quotedValue;

// An empty value has no position of its own (yaml-cpp marks the token after it): point at its
// key, or at the list that holds it.
Location where(const YAML::Node& value, const YAML::Node& owner) {
  return value.IsNull() ? locationOf(owner) : locationOf(value);
}

bool isControl(unsigned char c) { return c < 0x20 || c == 0x7f; }

bool hasControl(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](unsigned char c) { return isControl(c); });
}

bool isPlain(const YAML::Node& node) { return node.Tag() == "?"; }

// A base-10 integer, as YAML writes one unquoted; nullopt for anything else.
std::optional<int64_t> parseInteger(std::string_view digits) {
  if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
    return std::nullopt;
  }
  return value;
}

bool allDigits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(),
                                      [](unsigned char c) { return c >= '0' && c <= '9'; });
}

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// 1 to 3 groups of digits separated by ':'.
bool isColonGroups(std::string_view text) {
  int groups = 0;
  while (true) {
    const size_t colon = text.find(':');
    if (!allDigits(text.substr(0, colon))) return false;
    if (++groups > 3) return false;
    if (colon == std::string_view::npos) return true;
    text.remove_prefix(colon + 1);
  }
}

class FieldReader {
 public:
  FieldReader(const std::vector<std::string>& other_keys, SlurmRequest* out)
      : other_keys_(other_keys), out_(out) {}

  std::vector<SlurmFieldProblem> read(const YAML::Node& mapping) {
    if (!mapping.IsMap()) {
      report(locationOf(mapping), "",
             "expected a mapping of Slurm settings, got " + describe(mapping));
      return std::move(problems_);
    }
    std::map<std::string, int> first_line;
    // Range-for keeps each entry alive; yaml-cpp's it->first would point into a dead temporary.
    for (const auto& entry : mapping) {
      const YAML::Node& key = entry.first;
      const YAML::Node& value = entry.second;
      if (!key.IsScalar()) {
        report(locationOf(key), "", "expected a plain name as key, got " + describe(key));
        continue;
      }
      const std::string& name = key.Scalar();
      if (std::find(other_keys_.begin(), other_keys_.end(), name) != other_keys_.end()) continue;
      const auto [previous, inserted] = first_line.emplace(name, locationOf(key).line);
      if (!inserted) {
        report(locationOf(key), name,
               "duplicate key " + quotedValue(name) + " (first given on line " +
                   std::to_string(previous->second) + ")",
               "remove one of them");
        continue;
      }
      readField(name, key, value);
    }
    return std::move(problems_);
  }

 private:
  void readField(const std::string& name, const YAML::Node& key, const YAML::Node& value) {
    if (name == "nodes") {
      if (auto n = readInt(value, key, name, kNodes)) out_->nodes = *n;
    } else if (name == "ranks_per_node") {
      if (auto n = readInt(value, key, name, kRanksPerNode)) out_->ranks_per_node = *n;
    } else if (name == "gpus_per_node") {
      if (auto n = readInt(value, key, name, kGpusPerNode)) out_->gpus_per_node = *n;
    } else if (name == "partition") {
      if (auto s = readWord(value, key, name, "a partition name")) out_->partition = *s;
    } else if (name == "account") {
      if (auto s = readWord(value, key, name, "an account name")) out_->account = *s;
    } else if (name == "qos") {
      if (auto s = readWord(value, key, name, "a QOS name")) out_->qos = *s;
    } else if (name == "constraint") {
      if (auto s = readWord(value, key, name, "a node feature expression")) out_->constraint = *s;
    } else if (name == "time") {
      readTime(value, key);
    } else if (name == "sbatch_args") {
      readSbatchArgs(value, key);
    } else {
      reportUnknownKey(name, key);
    }
  }

  void report(Location at, std::string field, std::string message, std::string hint = {}) {
    SlurmFieldProblem problem;
    problem.line = at.line;
    problem.column = at.column;
    problem.field = std::move(field);
    problem.message = std::move(message);
    problem.hint = std::move(hint);
    problems_.push_back(std::move(problem));
  }

  void reportUnknownKey(const std::string& name, const YAML::Node& key) {
    std::vector<std::string> known = slurmFieldNames();
    known.insert(known.end(), other_keys_.begin(), other_keys_.end());
    const std::string suggestion = closestMatch(name, known);
    std::string expected;
    for (const std::string& k : known) expected += (expected.empty() ? "" : ", ") + k;
    report(
        locationOf(key), name, "unknown key " + quotedValue(name),
        suggestion.empty() ? "expected one of: " + expected : "did you mean '" + suggestion + "'?");
  }

  // A plain YAML integer in `range`: not quoted, not a float or a boolean.
  std::optional<int> readInt(const YAML::Node& value, const YAML::Node& key,
                             const std::string& field, IntRange range) {
    const std::string expected = "expected an integer from " + std::to_string(range.min) + " to " +
                                 std::to_string(range.max);
    if (!value.IsScalar() || !isPlain(value)) {
      report(where(value, key), field, expected + ", got " + describe(value),
             value.IsScalar() && value.Tag() == "!" ? "remove the quotes" : "");
      return std::nullopt;
    }
    std::string_view text = value.Scalar();
    const std::optional<int64_t> parsed = parseInteger(text);
    if (!parsed) {
      if (!text.empty() && (text[0] == '+' || text[0] == '-')) text.remove_prefix(1);
      report(where(value, key), field,
             expected + ", got " +
                 (allDigits(text) ? value.Scalar() + ", which is out of range" : describe(value)));
      return std::nullopt;
    }
    if (*parsed < range.min || *parsed > range.max) {
      report(where(value, key), field, expected + ", got " + value.Scalar());
      return std::nullopt;
    }
    return static_cast<int>(*parsed);
  }

  // A non-empty scalar without spaces or control characters. Security: these values become
  // `#SBATCH --partition=VALUE` lines of the batch script, a shell script; a line break would
  // end the #SBATCH line and put the rest of the value on a line of its own, which the shell
  // runs as a command. A space would end the option inside sbatch's own parsing.
  std::optional<std::string> readWord(const YAML::Node& value, const YAML::Node& key,
                                      const std::string& field, const std::string& what) {
    if (!value.IsScalar()) {
      report(where(value, key), field, "expected " + what + ", got " + describe(value));
      return std::nullopt;
    }
    const std::string& text = value.Scalar();
    if (text.empty()) {
      report(where(value, key), field, "expected " + what + ", got ''");
      return std::nullopt;
    }
    if (hasControl(text)) {
      report(where(value, key), field,
             quotedValue(text) + " contains a line break or another control character; expected " +
                 what,
             "it becomes an #SBATCH line of the job's shell script, which must stay one line");
      return std::nullopt;
    }
    if (text.find(' ') != std::string::npos) {
      report(where(value, key), field, quotedValue(text) + " contains a space; expected " + what,
             "give one word, e.g. a comma-separated list without spaces");
      return std::nullopt;
    }
    return text;
  }

  void readTime(const YAML::Node& value, const YAML::Node& key) {
    const std::string what = "a Slurm time limit";
    const auto text = readWord(value, key, "time", what);
    if (!text) return;
    if (!isSlurmTimeLimit(*text)) {
      report(where(value, key), "time", "expected " + what + ", got " + quotedValue(*text),
             "MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS, DAYS-HOURS:MINUTES, "
             "DAYS-HOURS:MINUTES:SECONDS or UNLIMITED, e.g. 90, 4:00:00, 1-12:00:00");
      return;
    }
    out_->time = *text;
  }

  void readSbatchArgs(const YAML::Node& value, const YAML::Node& key) {
    if (!value.IsSequence()) {
      std::string hint = "write it as a list, e.g. [--exclusive, --mail-type=END]";
      if (value.IsScalar() && !value.Scalar().empty()) {
        hint = "write it as a list: [" + value.Scalar() + "]";
      }
      report(where(value, key), "sbatch_args",
             "expected a list of sbatch options, got " + describe(value), hint);
      return;
    }
    std::vector<std::string> args;
    for (size_t i = 0; i < value.size(); ++i) {
      const YAML::Node item = value[i];
      const std::string field = "sbatch_args[" + std::to_string(i) + "]";
      if (!item.IsScalar()) {
        report(where(item, value), field, "expected an sbatch option, got " + describe(item));
        continue;
      }
      const std::string& arg = item.Scalar();
      // Security, as in readWord: the options also reach a shell script's #SBATCH lines.
      if (hasControl(arg)) {
        report(where(item, value), field,
               quotedValue(arg) + " contains a line break or another control character",
               "each option must stay on one line of the job's shell script");
        continue;
      }
      if (arg.empty() || arg[0] != '-') {
        report(where(item, value), field,
               "expected an sbatch option starting with '-', got " + quotedValue(arg),
               "e.g. --exclusive or --mem=64G; write an option and its value as one item, "
               "--mem=64G");
        continue;
      }
      args.push_back(arg);
    }
    out_->sbatch_args = std::move(args);
  }

  const std::vector<std::string>& other_keys_;
  SlurmRequest* out_;
  std::vector<SlurmFieldProblem> problems_;
};

}  // namespace

SlurmRequest withDefaults(SlurmRequest request, const SlurmRequest& defaults) {
  auto fill = [](std::string& value, const std::string& fallback) {
    if (value.empty()) value = fallback;
  };
  fill(request.cluster, defaults.cluster);
  if (request.nodes == 0) request.nodes = defaults.nodes;
  if (request.ranks_per_node == 0) request.ranks_per_node = defaults.ranks_per_node;
  if (request.gpus_per_node == 0) request.gpus_per_node = defaults.gpus_per_node;
  fill(request.partition, defaults.partition);
  fill(request.account, defaults.account);
  fill(request.qos, defaults.qos);
  fill(request.time, defaults.time);
  fill(request.constraint, defaults.constraint);
  std::vector<std::string> args = defaults.sbatch_args;
  args.insert(args.end(), request.sbatch_args.begin(), request.sbatch_args.end());
  request.sbatch_args = std::move(args);
  return request;
}

int ranksPerNode(const SlurmRequest& request) {
  if (request.ranks_per_node > 0) return request.ranks_per_node;
  if (request.gpus_per_node > 0) return request.gpus_per_node;
  return 1;
}

const std::vector<std::string>& slurmFieldNames() {
  static const auto* names = new std::vector<std::string>{
      "nodes", "ranks_per_node", "gpus_per_node", "partition",  "account",
      "qos",   "time",           "constraint",    "sbatch_args"};
  return *names;
}

bool isSlurmTimeLimit(const std::string& text) {
  if (equalsIgnoringCase(text, "UNLIMITED") || equalsIgnoringCase(text, "INFINITE")) return true;
  const size_t dash = text.find('-');
  if (dash == std::string::npos) return isColonGroups(text);  // M, M:S, H:M:S
  // DAYS-HOURS, DAYS-HOURS:MINUTES, DAYS-HOURS:MINUTES:SECONDS
  const std::string_view view(text);
  return allDigits(view.substr(0, dash)) && isColonGroups(view.substr(dash + 1));
}

std::vector<SlurmFieldProblem> readSlurmFields(const YAML::Node& mapping,
                                               const std::vector<std::string>& other_keys,
                                               SlurmRequest* out) {
  try {
    return FieldReader(other_keys, out).read(mapping);
  } catch (const std::exception& e) {
    SlurmFieldProblem problem;
    problem.message = std::string("internal error while reading the Slurm settings: ") + e.what();
    return {problem};
  }
}

}  // namespace ringmaster::slurm

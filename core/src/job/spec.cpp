#include "ringmaster/job/spec.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>

#include "ringmaster/metrics/line_parser.h"
#include "ringmaster/util/closest_match.h"
#include "ringmaster/util/yaml_node.h"

namespace ringmaster::job {
namespace {

constexpr std::string_view kReservedEnvNames[] = {"RANK",
                                                  "LOCAL_RANK",
                                                  "WORLD_SIZE",
                                                  "LOCAL_WORLD_SIZE",
                                                  "GROUP_RANK",
                                                  "GROUP_WORLD_SIZE",
                                                  "ROLE_RANK",
                                                  "ROLE_NAME",
                                                  "ROLE_WORLD_SIZE",
                                                  "MASTER_ADDR",
                                                  "MASTER_PORT"};
constexpr std::string_view kReservedEnvPrefixes[] = {"TORCHELASTIC_", "RINGMASTER_"};

constexpr size_t kMaxNameLength = 64;

const std::map<std::string, std::string>& topLevelAliases() {
  static const auto* aliases = new std::map<std::string, std::string>{
      // Names people reach for (from torchrun, Slurm, Kubernetes) -> the key Ringmaster uses.
      {"args", "command"},
      {"argv", "command"},
      {"cmd", "command"},
      {"cwd", "workdir"},
      {"working_dir", "workdir"},
      {"environment", "env"},
      {"hosts", "placement"},
      {"nodes", "placement"},
      {"agents", "placement"},
      {"nprocs", "world_size"},
      {"num_ranks", "world_size"},
      {"ranks", "world_size"},
      {"retries", "restart"},
      {"max_restarts", "restart"},
      {"max_retries", "restart"},
      {"patterns", "metrics"},
      {"grace_seconds", "stop_grace_seconds"},
      {"dist_backend", "backend"},
      {"partition", "slurm"},
      {"account", "slurm"},
      {"sbatch", "slurm"},
      {"sbatch_args", "slurm"},
      {"gpus_per_node", "slurm"}};
  return *aliases;
}

using yaml::describe;
using yaml::Location;
using yaml::locationOf;
using yaml::quotedValue;

std::string join(const std::string& parent, const std::string& child) {
  return parent.empty() ? child : parent + "." + child;
}

std::string indexed(const std::string& field, size_t index) {
  return field + "[" + std::to_string(index) + "]";
}

std::string joinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

bool isValidJobName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-';
  });
}

bool isValidEnvName(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

bool isValidMetricName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  if (!std::isalpha(static_cast<unsigned char>(name[0])) && name[0] != '_') return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '.' || c == '/' || c == '-';
  });
}

// Parses a YAML plain scalar holding a base-10 integer; nullopt for anything else.
std::optional<int64_t> parseInteger(const std::string& text) {
  std::string_view digits = text;
  if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) {
    return std::nullopt;
  }
  return value;
}

// yaml-cpp 0.7's LoadAll() loops for ever, allocating, when a document starts with a token its
// parser cannot place, such as a ',' outside [ ] or { } (jbeder/yaml-cpp#1040, fixed upstream
// after 0.8): every further document it reads is an empty one at the same place. Walking the
// documents first (the parser is the same, the handler only notes where each one starts) finds
// that place without building any; nullopt when LoadAll() would finish.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;

  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

std::optional<YAML::Mark> stuckDocumentStart(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts handler;
  while (parser.HandleNextDocument(handler)) {
    const std::vector<YAML::Mark>& starts = handler.starts;
    if (starts.size() >= 2 && starts[starts.size() - 1].pos == starts[starts.size() - 2].pos) {
      return starts.back();
    }
  }
  return std::nullopt;
}

// Reads the spec field by field. Every problem becomes a diagnostic; parsing goes on so that one
// run reports all of them.
class SpecParser {
 public:
  SpecParser(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {}

  SpecParseResult parse() {
    try {
      YAML::Node root;
      if (loadDocument(&root)) {
        parseTopLevel(root);
        checkRequiredFields();
      }
    } catch (const YAML::Exception& e) {
      report(locationOf(e.mark), "", std::string("cannot read the YAML: ") + e.msg);
    } catch (const std::exception& e) {
      report({}, "", std::string("internal error while reading the spec: ") + e.what());
    } catch (...) {
      report({}, "", "internal error while reading the spec");
    }
    // Cross-field checks run last; show everything in file order, like a compiler.
    std::stable_sort(
        errors_.begin(), errors_.end(),
        [](const SpecDiagnostic& a, const SpecDiagnostic& b) { return a.line < b.line; });
    SpecParseResult result;
    result.errors = std::move(errors_);
    if (result.errors.empty()) {
      spec_.file = file_;
      spec_.text = text_;
      result.spec = std::move(spec_);
    }
    return result;
  }

 private:
  using FieldParser = void (SpecParser::*)(const YAML::Node& key, const YAML::Node& value);
  struct TopLevelField {
    const char* key;
    FieldParser parse;
  };

  static const std::vector<TopLevelField>& topLevelFields() {
    static const auto* fields = new std::vector<TopLevelField>{
        {"name", &SpecParser::parseName},
        {"description", &SpecParser::parseDescription},
        {"launcher", &SpecParser::parseLauncherField},
        {"command", &SpecParser::parseCommand},
        {"workdir", &SpecParser::parseWorkdir},
        {"python", &SpecParser::parsePython},
        {"env", &SpecParser::parseEnv},
        {"placement", &SpecParser::parsePlacement},
        {"world_size", &SpecParser::parseWorldSize},
        {"slurm", &SpecParser::parseSlurm},
        {"backend", &SpecParser::parseBackendField},
        {"restart", &SpecParser::parseRestart},
        {"metrics", &SpecParser::parseMetrics},
        {"native", &SpecParser::parseNative},
        {"tensorflow", &SpecParser::parseTensorflow},
        {"stop_grace_seconds", &SpecParser::parseStopGrace},
    };
    return *fields;
  }

  // Where to point for `value`; `owner` is its key in a mapping, or the list that holds it. An
  // empty value has no position of its own (yaml-cpp marks the token after it), so point at its
  // key, or at the '-' that opened the empty list item.
  Location where(const YAML::Node& value, const YAML::Node& owner) const {
    if (!value.IsNull()) return locationOf(value);
    return owner.IsSequence() ? emptyItemLocation(value) : locationOf(owner);
  }

  Location emptyItemLocation(const YAML::Node& item) const {
    const YAML::Mark mark = item.Mark();
    if (mark.is_null() || mark.pos <= 0 || static_cast<size_t>(mark.pos) > text_.size()) {
      return locationOf(item);
    }
    size_t pos = static_cast<size_t>(mark.pos);
    while (pos > 0 && std::isspace(static_cast<unsigned char>(text_[pos - 1]))) --pos;
    if (pos == 0 || text_[pos - 1] != '-') return locationOf(item);
    --pos;
    const size_t line_start = text_.rfind('\n', pos);
    const int line = 1 + static_cast<int>(std::count(text_.begin(), text_.begin() + pos, '\n'));
    const size_t column = line_start == std::string::npos ? pos + 1 : pos - line_start;
    return {line, static_cast<int>(column)};
  }

  void report(Location at, std::string field, std::string message, std::string hint = {}) {
    SpecDiagnostic d;
    d.file = file_;
    d.line = at.line;
    d.column = at.column;
    d.field = std::move(field);
    d.message = std::move(message);
    d.hint = std::move(hint);
    errors_.push_back(std::move(d));
  }

  // --- document ---

  bool loadDocument(YAML::Node* root) {
    std::vector<YAML::Node> documents;
    try {
      if (const std::optional<YAML::Mark> stuck = stuckDocumentStart(text_)) {
        const size_t pos = static_cast<size_t>(std::max(stuck->pos, 0));
        const std::string token = pos < text_.size() ? text_.substr(pos, 1) : "";
        report(locationOf(*stuck), "",
               "YAML syntax error: unexpected " +
                   (token.empty() ? std::string("end of file") : quotedValue(token)),
               token == "," ? "a ',' separates items only inside [ ] or { }" : "");
        return false;
      }
      documents = YAML::LoadAll(std::string(text_));
    } catch (const YAML::ParserException& e) {
      report(locationOf(e.mark), "", "YAML syntax error: " + e.msg,
             "check the indentation and that each ':' is followed by a space");
      return false;
    }
    if (documents.empty() || (documents.size() == 1 && documents[0].IsNull())) {
      report({1, 1}, "",
             "the file is empty; expected a mapping with at least name, launcher, "
             "command and placement or world_size");
      return false;
    }
    if (documents.size() > 1) {
      report(locationOf(documents[1]), "",
             "the file holds " + std::to_string(documents.size()) + " YAML documents; expected one",
             "remove the '---' separator");
      return false;
    }
    if (!documents[0].IsMap()) {
      report(locationOf(documents[0]), "",
             "expected a mapping of settings at the top level, got " + describe(documents[0]),
             "start with 'name: my-job' on its own line");
      return false;
    }
    *root = documents[0];
    root_location_ = locationOf(*root);
    return true;
  }

  // Calls fn(name, key, value) for each entry of `map`, reporting keys that are not plain names
  // and keys given twice (yaml-cpp keeps both).
  template <typename Fn>
  void forEachEntry(const YAML::Node& map, const std::string& field, Fn&& fn) {
    std::map<std::string, int> first_line;
    // Range-for keeps each entry alive; yaml-cpp's it->first would point into a dead temporary.
    for (const auto& entry : map) {
      const YAML::Node& key = entry.first;
      if (!key.IsScalar()) {
        report(locationOf(key), field, "expected a plain name as key, got " + describe(key));
        continue;
      }
      const std::string& name = key.Scalar();
      const auto [previous, inserted] = first_line.emplace(name, locationOf(key).line);
      if (!inserted) {
        report(locationOf(key), join(field, name),
               "duplicate key " + quotedValue(name) + " (first given on line " +
                   std::to_string(previous->second) + ")",
               "remove one of them");
        continue;
      }
      fn(name, key, entry.second);
    }
  }

  void reportUnknownKey(const std::string& name, const YAML::Node& key, const std::string& field,
                        const std::vector<std::string>& known,
                        const std::map<std::string, std::string>* aliases = nullptr) {
    std::string suggestion = closestMatch(name, known);
    if (suggestion.empty() && aliases != nullptr) {
      // Also catch typos of an alias ("enviroment" -> "environment" -> env).
      std::vector<std::string> alias_names;
      for (const auto& [alias, target] : *aliases) alias_names.push_back(alias);
      const std::string alias = closestMatch(name, alias_names);
      if (!alias.empty()) suggestion = aliases->at(alias);
    }
    const std::string where_text = field.empty() ? "" : " in " + field;
    report(locationOf(key), join(field, name), "unknown key " + quotedValue(name) + where_text,
           suggestion.empty() ? "expected one of: " + joinNames(known)
                              : "did you mean '" + suggestion + "'?");
  }

  void parseTopLevel(const YAML::Node& root) {
    std::vector<std::string> known;
    for (const TopLevelField& field : topLevelFields()) known.emplace_back(field.key);
    forEachEntry(
        root, "", [&](const std::string& name, const YAML::Node& key, const YAML::Node& value) {
          const auto& fields = topLevelFields();
          const auto field = std::find_if(fields.begin(), fields.end(),
                                          [&](const TopLevelField& f) { return name == f.key; });
          if (field == fields.end()) {
            reportUnknownKey(name, key, "", known, &topLevelAliases());
            return;
          }
          keys_[name] = key;
          (this->*(field->parse))(key, value);
        });
  }

  // --- typed readers: each reports what is wrong and returns nullopt ---

  std::optional<std::string> readString(const YAML::Node& value, const YAML::Node& key,
                                        const std::string& field,
                                        const std::string& expected = "a string") {
    if (!value.IsScalar()) {
      report(where(value, key), field, "expected " + expected + ", got " + describe(value));
      return std::nullopt;
    }
    return value.Scalar();
  }

  // An integer >= `min`; rejects floats, quoted numbers and values that do not fit an int.
  std::optional<int> readInt(const YAML::Node& value, const YAML::Node& key,
                             const std::string& field, int min) {
    const std::string expected = min == 1   ? "a positive integer"
                                 : min == 0 ? "a non-negative integer"
                                            : "an integer >= " + std::to_string(min);
    if (!value.IsScalar() || value.Tag() == "!") {
      report(where(value, key), field, "expected " + expected + ", got " + describe(value),
             value.IsScalar() ? "remove the quotes" : "");
      return std::nullopt;
    }
    const std::optional<int64_t> parsed = parseInteger(value.Scalar());
    if (!parsed) {
      report(where(value, key), field, "expected " + expected + ", got " + describe(value));
      return std::nullopt;
    }
    if (*parsed > std::numeric_limits<int>::max()) {
      report(where(value, key), field,
             "expected " + expected + ", got " + describe(value) + ", which is too large");
      return std::nullopt;
    }
    if (*parsed < min) {
      report(where(value, key), field, "expected " + expected + ", got " + describe(value));
      return std::nullopt;
    }
    return static_cast<int>(*parsed);
  }

  // A number of seconds >= 0 (integer or decimal, unquoted).
  std::optional<double> readSeconds(const YAML::Node& value, const YAML::Node& key,
                                    const std::string& field) {
    const std::string expected = "a number of seconds >= 0";
    double seconds = 0;
    const std::string text = value.IsScalar() ? value.Scalar() : "";
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, seconds);
    if (!value.IsScalar() || value.Tag() == "!" || text.empty() || error != std::errc() ||
        stop != end || !(seconds >= 0) || seconds > 1e7) {
      report(where(value, key), field, "expected " + expected + ", got " + describe(value));
      return std::nullopt;
    }
    return seconds;
  }

  std::optional<bool> readBool(const YAML::Node& value, const YAML::Node& key,
                               const std::string& field) {
    if (value.IsScalar() && value.Tag() != "!") {
      if (value.Scalar() == "true") return true;
      if (value.Scalar() == "false") return false;
    }
    report(where(value, key), field, "expected true or false, got " + describe(value));
    return std::nullopt;
  }

  bool expectMapping(const YAML::Node& value, const YAML::Node& key, const std::string& field,
                     const std::string& expected, const std::string& hint = {}) {
    if (value.IsMap()) return true;
    report(where(value, key), field, "expected " + expected + ", got " + describe(value), hint);
    return false;
  }

  // --- top-level fields ---

  void parseName(const YAML::Node& key, const YAML::Node& value) {
    const auto name = readString(value, key, "name", "a job name");
    if (!name) return;
    if (!isValidJobName(*name)) {
      report(where(value, key), "name",
             "expected 1-64 characters from A-Z a-z 0-9 . _ -, got " + quotedValue(*name));
      return;
    }
    spec_.name = *name;
  }

  void parseDescription(const YAML::Node& key, const YAML::Node& value) {
    const auto text = readString(value, key, "description", "a text");
    if (!text) return;
    if (text->size() > kMaxDescriptionBytes) {
      report(where(value, key), "description",
             "expected at most " + std::to_string(kMaxDescriptionBytes) + " bytes, got " +
                 std::to_string(text->size()),
             "the dashboard shows it above the charts: say what the job is and what to look at");
      return;
    }
    spec_.description = *text;
  }

  void parseLauncherField(const YAML::Node& key, const YAML::Node& value) {
    const std::string expected = "one of native, torchrun, command, tensorflow, deepspeed";
    const auto text = readString(value, key, "launcher", expected);
    if (!text) return;
    const std::optional<Launcher> launcher = parseLauncher(*text);
    if (!launcher) {
      const std::string suggestion =
          closestMatch(*text, {"native", "torchrun", "command", "tensorflow", "deepspeed"});
      report(where(value, key), "launcher", "expected " + expected + ", got " + quotedValue(*text),
             suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
      return;
    }
    spec_.launcher = *launcher;
    launcher_known_ = true;
  }

  void parseCommand(const YAML::Node& key, const YAML::Node& value) {
    if (!value.IsSequence()) {
      std::string hint = "write it as a list, e.g. [python, train.py]";
      if (value.IsScalar()) {
        std::istringstream words(value.Scalar());
        std::vector<std::string> argv{std::istream_iterator<std::string>(words), {}};
        if (!argv.empty()) hint = "write it as a list: [" + joinNames(argv) + "]";
      }
      report(where(value, key), "command", "expected a list of arguments, got " + describe(value),
             hint);
      command_invalid_ = true;
      return;
    }
    for (size_t i = 0; i < value.size(); ++i) {
      const auto arg = readString(value[i], value, indexed("command", i));
      if (!arg) {
        command_invalid_ = true;
        continue;
      }
      spec_.command.push_back(*arg);
    }
  }

  void parseWorkdir(const YAML::Node& key, const YAML::Node& value) {
    const auto path = readString(value, key, "workdir", "an absolute path");
    if (!path) return;
    if (path->empty() || (*path)[0] != '/') {
      report(where(value, key), "workdir", "expected an absolute path, got " + quotedValue(*path),
             "ranks run on their agents' machines; give the full path there, starting with '/'");
      return;
    }
    spec_.workdir = *path;
  }

  void parsePython(const YAML::Node& key, const YAML::Node& value) {
    const auto python = readString(value, key, "python", "an interpreter");
    if (!python) return;
    if (python->empty() || (python->find('/') != std::string::npos && (*python)[0] != '/')) {
      report(where(value, key), "python",
             "expected an absolute path or a program name, got " + quotedValue(*python),
             "e.g. python: /opt/conda/envs/train/bin/python, or python: python3.11 (found on "
             "the rank's PATH)");
      return;
    }
    spec_.python = *python;
  }

  void parseEnv(const YAML::Node& key, const YAML::Node& value) {
    if (!expectMapping(value, key, "env", "a mapping of NAME: value",
                       "write one 'NAME: value' per line under env:")) {
      return;
    }
    forEachEntry(
        value, "env",
        [&](const std::string& name, const YAML::Node& name_node, const YAML::Node& env_value) {
          const std::string field = join("env", name);
          if (!isValidEnvName(name)) {
            report(locationOf(name_node), field,
                   "expected a variable name matching [A-Za-z_][A-Za-z0-9_]*, got " +
                       quotedValue(name));
            return;
          }
          if (isReservedEnvName(name)) {
            report(locationOf(name_node), field, quotedValue(name) + " is reserved",
                   "Ringmaster sets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, "
                   "TORCHELASTIC_* and RINGMASTER_* for every rank itself; remove it");
            return;
          }
          if (env_value.IsNull()) {
            report(locationOf(name_node), field, "expected a value, got nothing",
                   "write " + name + ": \"\" for an empty value");
            return;
          }
          const auto text = readString(env_value, name_node, field);
          if (text) spec_.env.emplace_back(name, *text);
        });
  }

  void parsePlacement(const YAML::Node& key, const YAML::Node& value) {
    if (!value.IsSequence()) {
      report(where(value, key), "placement",
             "expected a list of {agent, ranks} entries, got " + describe(value),
             "write one entry per agent, e.g. '- {agent: node1, ranks: 4}'");
      return;
    }
    if (value.size() == 0) {
      report(locationOf(value), "placement", "expected at least one {agent, ranks} entry");
      return;
    }
    std::map<std::string, std::pair<size_t, int>> first_use;  // agent -> (index, line)
    for (size_t i = 0; i < value.size(); ++i) {
      std::optional<PlacementEntry> entry = parsePlacementEntry(value[i], value, i);
      if (!entry) continue;
      const auto [previous, inserted] = first_use.emplace(entry->agent, std::pair{i, entry->line});
      if (!inserted) {
        report({entry->line, locationOf(value[i]).column}, indexed("placement", i) + ".agent",
               "agent " + quotedValue(entry->agent) + " is listed twice (first at " +
                   indexed("placement", previous->second.first) + ", line " +
                   std::to_string(previous->second.second) + ")",
               "merge the two entries into one");
        continue;
      }
      spec_.placement.push_back(std::move(*entry));
    }
  }

  std::optional<PlacementEntry> parsePlacementEntry(const YAML::Node& node, const YAML::Node& list,
                                                    size_t index) {
    const std::string field = indexed("placement", index);
    if (!expectMapping(node, list, field, "a mapping {agent: NAME, ranks: N}")) {
      placement_invalid_ = true;
      return std::nullopt;
    }
    PlacementEntry entry;
    entry.line = locationOf(node).line;
    bool has_agent = false;
    bool has_ranks = false;
    bool valid = true;
    forEachEntry(
        node, field, [&](const std::string& name, const YAML::Node& key, const YAML::Node& value) {
          if (name == "agent") {
            has_agent = true;
            const auto agent = readString(value, key, join(field, "agent"), "an agent name");
            if (agent && agent->empty()) {
              report(where(value, key), join(field, "agent"), "expected an agent name, got ''");
            }
            valid = valid && agent && !agent->empty();
            if (agent) entry.agent = *agent;
          } else if (name == "ranks") {
            has_ranks = true;
            const auto ranks = readInt(value, key, join(field, "ranks"), 1);
            valid = valid && ranks.has_value();
            if (ranks) entry.ranks = *ranks;
          } else {
            reportUnknownKey(name, key, field, {"agent", "ranks"});
          }
        });
    if (!has_agent) {
      report(locationOf(node), join(field, "agent"), "missing; expected the agent's name");
    }
    if (!has_ranks) {
      report(locationOf(node), join(field, "ranks"),
             "missing; expected the number of ranks to run on this agent (a positive integer)");
    }
    if (!valid || !has_agent || !has_ranks) {
      placement_invalid_ = true;
      return std::nullopt;
    }
    return entry;
  }

  void parseWorldSize(const YAML::Node& key, const YAML::Node& value) {
    spec_.world_size_line = locationOf(key).line;
    const auto world_size = readInt(value, key, "world_size", 1);
    if (world_size) spec_.world_size = *world_size;
  }

  // `slurm:` — Slurm allocates the nodes; the fields are those of a cluster file's slurm: entry
  // (slurm::readSlurmFields), plus the cluster the job runs on.
  void parseSlurm(const YAML::Node& key, const YAML::Node& value) {
    if (!expectMapping(value, key, "slurm", "a mapping {cluster: NAME, nodes: N, ...}",
                       "e.g. slurm: {cluster: hpc, nodes: 2, gpus_per_node: 4}")) {
      slurm_invalid_ = true;
      return;
    }
    slurm::SlurmRequest request;
    request.line = locationOf(key).line;
    bool valid = true;
    bool has_nodes = false;
    int cluster_line = 0;
    // readSlurmFields reads every key but `cluster` (and reports keys that are not names).
    for (const auto& entry : value) {
      const YAML::Node& name = entry.first;
      if (!name.IsScalar()) continue;
      if (name.Scalar() == "nodes") has_nodes = true;
      if (name.Scalar() != "cluster") continue;
      if (cluster_line != 0) {
        report(locationOf(name), "slurm.cluster",
               "duplicate key 'cluster' (first given on line " + std::to_string(cluster_line) + ")",
               "remove one of them");
        valid = false;
        continue;
      }
      cluster_line = locationOf(name).line;
      const auto cluster = readClusterName(entry.second, name);
      valid = valid && cluster.has_value();
      if (cluster) request.cluster = *cluster;
    }
    for (const slurm::SlurmFieldProblem& problem :
         slurm::readSlurmFields(value, {"cluster"}, &request)) {
      report({problem.line, problem.column}, join("slurm", problem.field), problem.message,
             problem.hint);
      valid = false;
    }
    if (!has_nodes) {
      report(locationOf(key), "slurm.nodes",
             "missing; expected the number of nodes to allocate (an integer from 1 to 100000)",
             "e.g. nodes: 2; each node runs ranks_per_node ranks (default: gpus_per_node, else 1)");
    }
    slurm_invalid_ = !valid || !has_nodes;
    spec_.slurm = std::move(request);
  }

  std::optional<std::string> readClusterName(const YAML::Node& value, const YAML::Node& key) {
    const std::string expected = "the name of a slurm: entry of the cluster file";
    const auto name = readString(value, key, "slurm.cluster", expected);
    if (!name) return std::nullopt;
    if (name->empty() || std::any_of(name->begin(), name->end(),
                                     [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
      report(
          where(value, key), "slurm.cluster",
          "expected " + expected + (name->empty() ? ", got ''" : ", without control characters"));
      return std::nullopt;
    }
    return name;
  }

  void parseBackendField(const YAML::Node& key, const YAML::Node& value) {
    const std::string expected = "one of auto, nccl, gloo";
    const auto text = readString(value, key, "backend", expected);
    if (!text) return;
    const std::optional<Backend> backend = parseBackend(*text);
    if (!backend) {
      const std::string suggestion = closestMatch(*text, {"auto", "nccl", "gloo"});
      report(where(value, key), "backend", "expected " + expected + ", got " + quotedValue(*text),
             suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
      return;
    }
    spec_.backend = *backend;
  }

  void parseRestart(const YAML::Node& key, const YAML::Node& value) {
    static const std::vector<std::string> kKeys = {
        "max_restarts", "backoff_seconds",      "hang_timeout_seconds",  "on_hang",
        "min_nodes",    "exclude_failed_hosts", "rejoin_timeout_seconds"};
    if (!expectMapping(value, key, "restart", "a mapping {max_restarts: N, ...}")) return;
    RestartPolicy& policy = spec_.restart;
    forEachEntry(
        value, "restart",
        [&](const std::string& name, const YAML::Node& entry_key, const YAML::Node& entry_value) {
          const std::string field = "restart." + name;
          if (name == "max_restarts") {
            if (auto n = readInt(entry_value, entry_key, field, 0)) policy.max_restarts = *n;
          } else if (name == "min_nodes") {
            if (auto n = readInt(entry_value, entry_key, field, 1)) policy.min_nodes = *n;
          } else if (name == "backoff_seconds") {
            if (auto s = readSeconds(entry_value, entry_key, field)) policy.backoff_seconds = *s;
          } else if (name == "hang_timeout_seconds") {
            if (auto s = readSeconds(entry_value, entry_key, field)) {
              policy.hang_timeout_seconds = *s;
            }
          } else if (name == "rejoin_timeout_seconds") {
            if (auto s = readSeconds(entry_value, entry_key, field)) {
              policy.rejoin_timeout_seconds = *s;
            }
          } else if (name == "on_hang") {
            parseOnHang(entry_key, entry_value);
          } else if (name == "exclude_failed_hosts") {
            if (auto b = readBool(entry_value, entry_key, field)) policy.exclude_failed_hosts = *b;
          } else {
            reportUnknownKey(name, entry_key, "restart", kKeys);
          }
        });
  }

  // tensorflow: {chief: true, ps: 1}: the TF_CONFIG roles (checked against world_size once it is
  // known, in checkTensorflowRoles).
  void parseTensorflow(const YAML::Node& key, const YAML::Node& value) {
    if (!expectMapping(value, key, "tensorflow", "a mapping {chief: true|false, ps: N}")) return;
    forEachEntry(
        value, "tensorflow",
        [&](const std::string& name, const YAML::Node& entry_key, const YAML::Node& entry_value) {
          const std::string field = "tensorflow." + name;
          if (name == "chief") {
            if (auto b = readBool(entry_value, entry_key, field)) spec_.tensorflow.chief = *b;
          } else if (name == "ps") {
            if (auto n = readInt(entry_value, entry_key, field, 0)) spec_.tensorflow.ps = *n;
          } else {
            reportUnknownKey(name, entry_key, "tensorflow", {"chief", "ps"});
          }
        });
  }

  void parseOnHang(const YAML::Node& key, const YAML::Node& value) {
    static const std::vector<std::string> kActions = {"warn", "restart", "fail"};
    const std::string expected = "one of warn, restart, fail";
    const auto text = readString(value, key, "restart.on_hang", expected);
    if (!text) return;
    if (std::find(kActions.begin(), kActions.end(), *text) == kActions.end()) {
      const std::string suggestion = closestMatch(*text, kActions);
      report(where(value, key), "restart.on_hang",
             "expected " + expected + ", got " + quotedValue(*text),
             suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
      return;
    }
    spec_.restart.on_hang = *text;
  }

  void parseMetrics(const YAML::Node& key, const YAML::Node& value) {
    if (!expectMapping(value, key, "metrics", "a mapping {patterns: {NAME: REGEX}}")) return;
    forEachEntry(
        value, "metrics",
        [&](const std::string& name, const YAML::Node& entry_key, const YAML::Node& entry_value) {
          if (name != "patterns") {
            reportUnknownKey(name, entry_key, "metrics", {"patterns"});
            return;
          }
          parseMetricPatterns(entry_key, entry_value);
        });
  }

  void parseMetricPatterns(const YAML::Node& key, const YAML::Node& value) {
    if (!expectMapping(value, key, "metrics.patterns", "a mapping of NAME: REGEX",
                       "e.g. loss: 'loss=([-+0-9.eE]+)'")) {
      return;
    }
    forEachEntry(
        value, "metrics.patterns",
        [&](const std::string& name, const YAML::Node& name_node, const YAML::Node& regex_node) {
          const std::string field = join("metrics.patterns", name);
          if (!isValidMetricName(name)) {
            report(locationOf(name_node), field,
                   "expected a metric name (a letter or '_', then letters, digits, _ . / -), got " +
                       quotedValue(name));
            return;
          }
          const auto regex = readString(regex_node, name_node, field, "a regular expression");
          if (regex && checkRegex(*regex, where(regex_node, name_node), field)) {
            spec_.metric_patterns.push_back({name, *regex});
          }
        });
  }

  // The agent's engine (RE2) decides, so that what passes here also compiles there.
  bool checkRegex(const std::string& text, Location at, const std::string& field) {
    const Status status = metrics::checkMetricPattern(text);
    if (status.isOk()) return true;
    if (status.message().find("capture group") != std::string::npos) {
      report(at, field, "the regular expression " + quotedValue(text) + " has no capture group",
             "group 1 must capture the number, e.g. 'loss=([-+0-9.eE]+)'");
    } else {
      report(at, field,
             "invalid regular expression " + quotedValue(text) + ": " + status.message());
    }
    return false;
  }

  void parseNative(const YAML::Node& key, const YAML::Node& value) {
    if (!expectMapping(value, key, "native", "a mapping of native trainer settings")) return;
    spec_.native_yaml = YAML::Dump(value);
    spec_.native_line = locationOf(key).line;
  }

  void parseStopGrace(const YAML::Node& key, const YAML::Node& value) {
    const auto seconds = readInt(value, key, "stop_grace_seconds", 0);
    if (seconds) spec_.stop_grace_seconds = *seconds;
  }

  // --- checks that span fields, after every key was read ---

  Location keyLocation(const std::string& name) const {
    const auto it = keys_.find(name);
    return it == keys_.end() ? root_location_ : locationOf(it->second);
  }

  bool has(const std::string& name) const { return keys_.count(name) != 0; }

  void checkRequiredFields() {
    if (!has("name")) {
      report(root_location_, "name", "missing; expected a job name (1-64 of A-Z a-z 0-9 . _ -)");
    }
    if (!has("launcher")) {
      report(root_location_, "launcher",
             "missing; expected one of native, torchrun, command, tensorflow, deepspeed");
    }
    if (launcher_known_) checkLauncherFields();
    checkPlacementOrWorldSize();
    if (launcher_known_) checkTensorflowRoles();
  }

  // The roles must leave a rank that trains: TensorFlow's ParameterServerStrategy needs at least
  // one worker beside its parameter servers, and a cluster of parameter servers alone trains
  // nothing.
  void checkTensorflowRoles() {
    if (!has("tensorflow")) return;
    if (spec_.launcher != Launcher::kTensorflow) {
      report(keyLocation("tensorflow"), "tensorflow",
             "'tensorflow:' is only used with launcher 'tensorflow' (launcher is " +
                 quotedValue(launcherName(spec_.launcher)) + ")",
             "remove the tensorflow section or set launcher: tensorflow");
      return;
    }
    const TensorflowRoles& roles = spec_.tensorflow;
    if (spec_.world_size <= 0) return;  // placement or world_size already reported
    const int workers = spec_.world_size - (roles.chief ? 1 : 0) - roles.ps;
    if (workers < 0 || (roles.ps > 0 && workers < 1)) {
      report(keyLocation("tensorflow"), "tensorflow",
             "the job has " + std::to_string(spec_.world_size) + " rank(s) but the roles take " +
                 std::to_string((roles.chief ? 1 : 0) + roles.ps) + " (" +
                 (roles.chief ? "a chief and " : "") + std::to_string(roles.ps) +
                 " ps), leaving no worker",
             "parameter servers need at least one worker: raise world_size or lower ps");
    }
  }

  void checkLauncherFields() {
    const std::string launcher = quotedValue(launcherName(spec_.launcher));
    if (spec_.launcher == Launcher::kNative) {
      if (!has("native")) {
        report(keyLocation("launcher"), "native",
               "missing; launcher 'native' needs a 'native:' mapping with the trainer settings");
      }
      return;
    }
    if (has("native")) {
      report(keyLocation("native"), "native",
             "'native:' is only used with launcher 'native' (launcher is " + launcher + ")",
             "remove the native section or set launcher: native");
    }
    if (!has("command")) {
      report(root_location_, "command",
             "missing; launcher " + launcher + " needs the command to run",
             "e.g. command: [python, train.py]");
    } else if (!command_invalid_ && spec_.command.empty()) {
      report(keyLocation("command"), "command",
             "expected at least one argument; launcher " + launcher + " needs the command to run");
    }
  }

  void checkPlacementOrWorldSize() {
    const bool has_placement = has("placement");
    const bool has_world_size = has("world_size");
    if (has("slurm")) {
      checkSlurmPlacement(has_placement, has_world_size);
      return;
    }
    if (has_placement && has_world_size) {
      report(keyLocation("world_size"), "world_size",
             "both placement and world_size are given; expected exactly one",
             "placement pins ranks to agents; world_size lets Ringmaster fill free slots");
      return;
    }
    if (!has_placement && !has_world_size) {
      report(root_location_, "placement", "neither placement nor world_size is given; expected one",
             "e.g. world_size: 4, or placement: [{agent: node1, ranks: 4}]");
      return;
    }
    if (has_placement && !placement_invalid_) sumPlacementRanks();
  }

  void checkSlurmPlacement(bool has_placement, bool has_world_size) {
    for (const std::string other : {"placement", "world_size"}) {
      if (!has(other)) continue;
      report(
          keyLocation(other), other, "both slurm and " + other + " are given; expected only slurm",
          "Slurm picks the nodes, and world_size is slurm.nodes * ranks_per_node; remove " + other);
    }
    if (has_placement || has_world_size || slurm_invalid_ || !spec_.slurm) return;
    // At most 100000 nodes * 1024 ranks: fits an int.
    spec_.world_size = spec_.slurm->nodes * slurm::ranksPerNode(*spec_.slurm);
  }

  void sumPlacementRanks() {
    int64_t total = 0;
    for (const PlacementEntry& entry : spec_.placement) total += entry.ranks;
    if (total > std::numeric_limits<int>::max()) {
      report(keyLocation("placement"), "placement",
             "the entries add up to " + std::to_string(total) + " ranks, which is too many");
      return;
    }
    spec_.world_size = static_cast<int>(total);
  }

  std::string text_;
  std::string file_;
  JobSpec spec_;
  std::vector<SpecDiagnostic> errors_;
  Location root_location_{1, 1};
  std::map<std::string, YAML::Node> keys_;  // top-level key -> its key node
  bool launcher_known_ = false;
  bool command_invalid_ = false;
  bool placement_invalid_ = false;
  bool slurm_invalid_ = false;
};

}  // namespace

const char* launcherName(Launcher launcher) {
  switch (launcher) {
    case Launcher::kNative:
      return "native";
    case Launcher::kTorchrun:
      return "torchrun";
    case Launcher::kCommand:
      return "command";
    case Launcher::kTensorflow:
      return "tensorflow";
    case Launcher::kDeepspeed:
      return "deepspeed";
  }
  return "unknown";
}

const char* backendName(Backend backend) {
  switch (backend) {
    case Backend::kAuto:
      return "auto";
    case Backend::kNccl:
      return "nccl";
    case Backend::kGloo:
      return "gloo";
  }
  return "unknown";
}

std::optional<Launcher> parseLauncher(std::string_view name) {
  for (Launcher launcher : {Launcher::kNative, Launcher::kTorchrun, Launcher::kCommand,
                            Launcher::kTensorflow, Launcher::kDeepspeed}) {
    if (name == launcherName(launcher)) return launcher;
  }
  return std::nullopt;
}

std::optional<Backend> parseBackend(std::string_view name) {
  for (Backend backend : {Backend::kAuto, Backend::kNccl, Backend::kGloo}) {
    if (name == backendName(backend)) return backend;
  }
  return std::nullopt;
}

bool isPythonScript(std::string_view program) {
  return program.size() > 3 && program.substr(program.size() - 3) == ".py";
}

bool isReservedEnvName(std::string_view name) {
  for (std::string_view reserved : kReservedEnvNames) {
    if (name == reserved) return true;
  }
  for (std::string_view prefix : kReservedEnvPrefixes) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

std::string SpecDiagnostic::toString() const {
  std::string out = file.empty() ? "<spec>" : file;
  if (line > 0) {
    out += ":" + std::to_string(line);
    if (column > 0) out += ":" + std::to_string(column);
  }
  out += ": error: ";
  if (!field.empty()) out += field + ": ";
  out += message;
  if (!hint.empty()) out += " (hint: " + hint + ")";
  return out;
}

std::string formatDiagnostics(const std::vector<SpecDiagnostic>& diagnostics) {
  std::string out;
  for (const SpecDiagnostic& diagnostic : diagnostics) out += diagnostic.toString() + "\n";
  return out;
}

SpecParseResult parseJobSpec(std::string_view text, std::string file_name) {
  return SpecParser(text, std::move(file_name)).parse();
}

SpecParseResult loadJobSpec(const std::string& path) {
  auto fail = [&](std::string message) {
    SpecParseResult result;
    SpecDiagnostic diagnostic;
    diagnostic.file = path;
    diagnostic.message = std::move(message);
    result.errors.push_back(std::move(diagnostic));
    return result;
  };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return fail("cannot read job spec '" + path + "': it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return fail("cannot open job spec '" + path + "': " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return fail("cannot read job spec '" + path + "': " + std::strerror(errno));
  return parseJobSpec(text.str(), path);
}

}  // namespace ringmaster::job

#include "editor/kept_keys.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>

#include "editor/yaml_scalar.h"

namespace ringmaster::gui {
namespace {

// The keys readJobDraft reads, per mapping: everything else in these mappings is kept. It must
// list exactly what job_draft.cpp reads (a key read and also kept would be written twice).
const std::map<std::string, std::vector<std::string>>& formKeys() {
  static const auto* keys = new std::map<std::string, std::vector<std::string>>{
      {"",
       {"name", "description", "launcher", "command", "workdir", "python", "env", "placement",
        "world_size", "slurm", "tensorflow", "backend", "restart", "metrics", "stop_grace_seconds",
        "native"}},
      {"restart", {"max_restarts"}},
      {"metrics", {"patterns"}},
      {"native",
       {"model", "dataset", "batch_size", "steps", "epochs", "optimizer", "grad_accumulation",
        "clip_norm", "checkpoint", "eval_every", "seed", "strategy"}},
      {"native.model", {"kind", "hidden", "activation", "task"}},
      {"native.dataset",
       {"kind", "samples", "features", "classes", "seed", "path", "label_column", "images",
        "labels", "test_images", "test_labels", "standardize", "eval_fraction"}},
      {"native.optimizer",
       {"name", "lr", "momentum", "nesterov", "beta1", "beta2", "eps", "weight_decay",
        "warmup_steps", "schedule"}},
      {"native.checkpoint", {"every_steps", "dir", "keep"}},
      {"native.strategy",
       {"local_sgd", "data_split", "compression", "pipeline", "parameter_server"}},
      {"native.strategy.local_sgd", {"average_every"}},
      {"native.strategy.pipeline", {"stages", "micro_batches"}},
      {"native.strategy.parameter_server", {"servers", "mode", "max_staleness", "max_lead"}},
  };
  return *keys;
}

YAML::Node child(const YAML::Node& map, const std::string& key) {
  if (!map.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  for (const auto& entry : map) {
    if (entry.first.IsScalar() && entry.first.Scalar() == key) return entry.second;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

// The mapping at a dotted path ("native.optimizer"), or an undefined node.
YAML::Node sectionAt(const YAML::Node& root, const std::string& path) {
  YAML::Node node = root;
  size_t start = 0;
  while (start < path.size()) {
    size_t dot = path.find('.', start);
    if (dot == std::string::npos) dot = path.size();
    node.reset(child(node, path.substr(start, dot - start)));  // operator= would assign into root
    start = dot + 1;
  }
  return node;
}

bool isFormKey(const std::vector<std::string>& known, const std::string& key) {
  return std::find(known.begin(), known.end(), key) != known.end();
}

std::string flowEntry(const std::string& key, const YAML::Node& value) {
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << value;
  return yamlKey(key) + ": " + out.c_str();
}

std::string blockEntry(const YAML::Node& key, const YAML::Node& value) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << key << YAML::Value << value << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::vector<std::string> splitLines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    end = end == std::string_view::npos ? text.size() : end + 1;
    lines.emplace_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

bool isBlank(const std::string& line) {
  return line.find_first_not_of(" \t\r\n") == std::string::npos;
}

// A comment at the top level: it belongs to the key below it, not to the value above.
bool isTopComment(const std::string& line) { return !line.empty() && line[0] == '#'; }

// The lines of the top-level entry that starts at line `first` and ends before line `next`, with
// the comment lines just above it, as written. The comments that open the file are the header,
// which the draft keeps on its own.
std::string entryLines(const std::vector<std::string>& lines, size_t first, size_t next) {
  size_t end = std::min(next, lines.size());
  while (end > first + 1 && (isBlank(lines[end - 1]) || isTopComment(lines[end - 1]))) --end;
  size_t begin = first;
  while (begin > 0 && isTopComment(lines[begin - 1])) --begin;
  const bool header = std::all_of(lines.begin(), lines.begin() + begin, [](const std::string& l) {
    return isBlank(l) || l.find_first_not_of(" \t") == l.find('#');
  });
  if (header) begin = first;
  std::string text;
  for (size_t i = begin; i < end; ++i) text += lines[i];
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

void findTopLevel(const YAML::Node& root, std::string_view text, std::vector<KeptKey>* kept) {
  const std::vector<std::string>& known = formKeys().at("");
  std::vector<size_t> starts;  // each top-level key's line, in the file's order
  bool verbatim = root.Style() != YAML::EmitterStyle::Flow;
  for (const auto& entry : root) {
    const YAML::Mark mark = entry.first.Mark();
    if (mark.is_null() || mark.column != 0 ||
        (!starts.empty() && static_cast<size_t>(mark.line) <= starts.back())) {
      verbatim = false;  // not one key per line at the margin: the lines cannot be cut apart
    }
    starts.push_back(mark.is_null() ? 0 : static_cast<size_t>(mark.line));
  }
  const std::vector<std::string> lines = splitLines(text);
  std::string after;
  size_t index = 0;
  for (const auto& entry : root) {
    const size_t i = index++;
    if (!entry.first.IsScalar()) continue;  // the validator reports it; there is no key to keep
    const std::string key = entry.first.Scalar();
    if (isFormKey(known, key)) {
      after = key;
      continue;
    }
    const size_t next = i + 1 < starts.size() ? starts[i + 1] : lines.size();
    kept->push_back(
        {"", key,
         verbatim ? entryLines(lines, starts[i], next) : blockEntry(entry.first, entry.second),
         after});
  }
}

}  // namespace

std::vector<KeptKey> findKeptKeys(const YAML::Node& root, std::string_view text) {
  std::vector<KeptKey> kept;
  if (!root.IsMap()) return kept;
  findTopLevel(root, text, &kept);
  for (const auto& [section, known] : formKeys()) {
    if (section.empty()) continue;
    const YAML::Node map = sectionAt(root, section);
    if (!map.IsMap()) continue;
    for (const auto& entry : map) {
      if (!entry.first.IsScalar() || isFormKey(known, entry.first.Scalar())) continue;
      kept.push_back(
          {section, entry.first.Scalar(), flowEntry(entry.first.Scalar(), entry.second), ""});
    }
  }
  return kept;
}

std::vector<std::string> keptIn(const std::vector<KeptKey>& kept, std::string_view section) {
  std::vector<std::string> texts;
  for (const KeptKey& k : kept) {
    if (k.section == section) texts.push_back(k.text);
  }
  return texts;
}

}  // namespace ringmaster::gui

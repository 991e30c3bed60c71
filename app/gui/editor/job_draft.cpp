#include "editor/job_draft.h"

#include <yaml-cpp/yaml.h>

#include <exception>
#include <sstream>

#include "editor/yaml_scalar.h"
#include "ringmaster/job/spec.h"

namespace ringmaster::gui {
namespace {

// The value of `key` in `map`, or an undefined node. Iterates rather than using operator[],
// which on yaml-cpp nodes can insert and does not work on non-maps.
YAML::Node child(const YAML::Node& map, const char* key) {
  if (!map.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  for (const auto& entry : map) {
    if (entry.first.IsScalar() && entry.first.Scalar() == key) return entry.second;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

bool has(const YAML::Node& map, const char* key) { return child(map, key).IsDefined(); }

// Copies a scalar into `out`; anything else leaves the form's current value (the validator
// reports the wrong shape on that field).
void readScalar(const YAML::Node& map, const char* key, std::string* out) {
  const YAML::Node node = child(map, key);
  if (node.IsDefined() && node.IsScalar()) *out = node.Scalar();
}

std::vector<std::pair<std::string, std::string>> readPairs(const YAML::Node& map) {
  std::vector<std::pair<std::string, std::string>> pairs;
  if (!map.IsMap()) return pairs;
  for (const auto& entry : map) {
    if (!entry.first.IsScalar()) continue;
    pairs.emplace_back(entry.first.Scalar(), entry.second.IsScalar() ? entry.second.Scalar() : "");
  }
  return pairs;
}

std::string joinScalars(const YAML::Node& list) {
  std::string out;
  for (const auto& item : list) {
    if (!out.empty()) out += ", ";
    out += item.IsScalar() ? item.Scalar() : "?";
  }
  return out;
}

void readNative(const YAML::Node& native, NativeDraft* d) {
  const YAML::Node model = child(native, "model");
  readScalar(model, "kind", &d->model_kind);
  const YAML::Node hidden = child(model, "hidden");
  if (hidden.IsSequence()) {
    d->hidden = joinScalars(hidden);
  } else if (hidden.IsDefined() && hidden.IsScalar()) {
    d->hidden = hidden.Scalar();
  }
  readScalar(model, "activation", &d->activation);
  readScalar(model, "task", &d->task);

  readScalar(native, "seed", &d->seed);
  d->dataset_seed = d->seed;  // the trainer's default for the data seed
  const YAML::Node dataset = child(native, "dataset");
  readScalar(dataset, "kind", &d->dataset_kind);
  readScalar(dataset, "samples", &d->samples);
  readScalar(dataset, "features", &d->features);
  readScalar(dataset, "classes", &d->classes);
  readScalar(dataset, "seed", &d->dataset_seed);
  readScalar(dataset, "path", &d->csv_path);
  readScalar(dataset, "label_column", &d->label_column);
  readScalar(dataset, "images", &d->images);
  readScalar(dataset, "labels", &d->labels);
  readScalar(dataset, "test_images", &d->test_images);
  readScalar(dataset, "test_labels", &d->test_labels);
  readScalar(dataset, "standardize", &d->standardize);
  readScalar(dataset, "eval_fraction", &d->eval_fraction);

  readScalar(native, "batch_size", &d->batch_size);
  if (has(native, "steps") && !has(native, "epochs")) {
    d->length_unit = "steps";
    readScalar(native, "steps", &d->length);
  } else {
    d->length_unit = "epochs";
    readScalar(native, "epochs", &d->length);
  }

  const YAML::Node optimizer = child(native, "optimizer");
  readScalar(optimizer, "name", &d->optimizer);
  readScalar(optimizer, "lr", &d->lr);
  readScalar(optimizer, "momentum", &d->momentum);
  readScalar(optimizer, "nesterov", &d->nesterov);
  readScalar(optimizer, "beta1", &d->beta1);
  readScalar(optimizer, "beta2", &d->beta2);
  readScalar(optimizer, "eps", &d->eps);
  readScalar(optimizer, "weight_decay", &d->weight_decay);
  readScalar(optimizer, "warmup_steps", &d->warmup_steps);
  readScalar(optimizer, "schedule", &d->schedule);

  readScalar(native, "grad_accumulation", &d->grad_accumulation);
  readScalar(native, "clip_norm", &d->clip_norm);
  const YAML::Node checkpoint = child(native, "checkpoint");
  readScalar(checkpoint, "every_steps", &d->checkpoint_every_steps);
  readScalar(checkpoint, "dir", &d->checkpoint_dir);
  readScalar(checkpoint, "keep", &d->checkpoint_keep);
  readScalar(native, "eval_every", &d->eval_every);

  const YAML::Node strategy = child(native, "strategy");
  readScalar(child(strategy, "local_sgd"), "average_every", &d->average_every);
  readScalar(strategy, "data_split", &d->data_split);
  const YAML::Node compression = child(strategy, "compression");
  if (compression.IsDefined() && compression.IsScalar()) {
    d->compression = compression.Scalar();
  } else if (compression.IsMap() && has(compression, "topk")) {
    d->compression = "topk";
    readScalar(child(compression, "topk"), "ratio", &d->topk_ratio);
  } else if (compression.IsMap() && has(compression, "powersgd")) {
    d->compression = "powersgd";
    readScalar(child(compression, "powersgd"), "rank", &d->powersgd_rank);
  }
  const YAML::Node pipeline = child(strategy, "pipeline");
  readScalar(pipeline, "stages", &d->pipeline_stages);
  readScalar(pipeline, "micro_batches", &d->micro_batches);
  const YAML::Node ps = child(strategy, "parameter_server");
  readScalar(ps, "servers", &d->ps_servers);
  readScalar(ps, "mode", &d->ps_mode);
  readScalar(ps, "max_staleness", &d->ps_max_staleness);
  readScalar(ps, "max_lead", &d->ps_max_lead);
}

std::string leadingComment(std::string_view text) {
  std::string header;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) {
      header += "\n";
      continue;
    }
    if (line[first] != '#') break;
    header += line + "\n";
  }
  while (!header.empty() && header.front() == '\n') header.erase(0, 1);
  while (header.size() >= 2 && header[header.size() - 1] == '\n' &&
         header[header.size() - 2] == '\n') {
    header.pop_back();
  }
  return header;
}

// "k: v" pairs of a flow mapping, skipping empty (omitted) values.
class FlowMap {
 public:
  FlowMap& add(const char* key, const std::string& value) {
    if (value.empty()) return *this;
    text_ += (text_.empty() ? "" : ", ") + std::string(key) + ": " + value;
    return *this;
  }
  // Entries already written as "key: value" (the keys the form keeps for the person).
  FlowMap& addEntries(const std::vector<std::string>& entries) {
    for (const std::string& entry : entries) text_ += (text_.empty() ? "" : ", ") + entry;
    return *this;
  }
  bool empty() const { return text_.empty(); }
  std::string str() const { return "{" + text_ + "}"; }

 private:
  std::string text_;
};

std::string flowList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + "]";
}

// "256, 128" (or "256 128") as a YAML list of the typed widths.
std::string hiddenList(const std::string& text) {
  std::vector<std::string> widths;
  std::string word;
  for (char c : text + ",") {
    if (c == ',' || c == ' ' || c == '\t') {
      if (!word.empty()) widths.push_back(yamlValue(word));
      word.clear();
    } else {
      word += c;
    }
  }
  return flowList(widths);
}

std::string value(const std::string& text) { return text.empty() ? "" : yamlValue(text); }

void writeNative(const NativeDraft& d, const std::vector<KeptKey>& kept, std::string* out) {
  std::string& o = *out;
  const auto keep = [&](const char* section) { return keptIn(kept, section); };
  o += "native:\n";
  o += "  model: " +
       FlowMap()
           .add("kind", value(d.model_kind))
           .add("hidden", hiddenList(d.hidden))
           .add("activation", value(d.activation))
           .add("task", value(d.task))
           .addEntries(keep("native.model"))
           .str() +
       "\n";
  FlowMap dataset;
  dataset.add("kind", value(d.dataset_kind));
  if (d.dataset_kind == "csv") {
    dataset.add("path", d.csv_path.empty() ? "" : yamlString(d.csv_path))
        .add("label_column", d.label_column.empty() ? "" : yamlString(d.label_column))
        .add("standardize", value(d.standardize));
  } else if (d.dataset_kind == "digits") {  // built in: only the split's seed and scaling
    dataset.add("seed", value(d.dataset_seed)).add("standardize", value(d.standardize));
  } else if (d.dataset_kind == "idx") {
    dataset.add("images", d.images.empty() ? "" : yamlString(d.images))
        .add("labels", d.labels.empty() ? "" : yamlString(d.labels));
    if (!d.test_images.empty() || !d.test_labels.empty()) {
      dataset.add("test_images", d.test_images.empty() ? "" : yamlString(d.test_images))
          .add("test_labels", d.test_labels.empty() ? "" : yamlString(d.test_labels));
    }
    dataset.add("standardize", value(d.standardize));
  } else if (d.dataset_kind == "fashion_mnist") {  // Debian's files, its own test set
    dataset.add("standardize", value(d.standardize));
  } else {
    dataset.add("samples", value(d.samples))
        .add("features", value(d.features))
        .add("classes", value(d.classes))
        .add("seed", value(d.dataset_seed));
  }
  const bool test_set =
      d.dataset_kind == "fashion_mnist" || (d.dataset_kind == "idx" && !d.test_images.empty());
  if (!test_set) dataset.add("eval_fraction", value(d.eval_fraction));
  dataset.addEntries(keep("native.dataset"));
  o += "  dataset: " + dataset.str() + "\n";
  if (!d.batch_size.empty()) o += "  batch_size: " + value(d.batch_size) + "\n";
  if (!d.length.empty()) {
    o += "  " + std::string(d.length_unit == "steps" ? "steps" : "epochs") + ": " +
         value(d.length) + "\n";
  }
  FlowMap optimizer;
  optimizer.add("name", value(d.optimizer)).add("lr", value(d.lr));
  if (d.optimizer == "adam") {
    optimizer.add("beta1", value(d.beta1)).add("beta2", value(d.beta2)).add("eps", value(d.eps));
  } else {
    optimizer.add("momentum", value(d.momentum));
    if (d.nesterov != "false") optimizer.add("nesterov", value(d.nesterov));
  }
  optimizer.add("weight_decay", value(d.weight_decay))
      .add("warmup_steps", value(d.warmup_steps))
      .add("schedule", value(d.schedule))
      .addEntries(keep("native.optimizer"));
  o += "  optimizer: " + optimizer.str() + "\n";
  if (!d.grad_accumulation.empty()) {
    o += "  grad_accumulation: " + value(d.grad_accumulation) + "\n";
  }
  if (!d.clip_norm.empty()) o += "  clip_norm: " + value(d.clip_norm) + "\n";
  FlowMap checkpoint;
  checkpoint.add("every_steps", value(d.checkpoint_every_steps))
      .add("dir", d.checkpoint_dir.empty() ? "" : yamlString(d.checkpoint_dir));
  if (d.checkpoint_keep != "3") checkpoint.add("keep", value(d.checkpoint_keep));
  checkpoint.addEntries(keep("native.checkpoint"));
  o += "  checkpoint: " + checkpoint.str() + "\n";
  if (!d.eval_every.empty()) o += "  eval_every: " + value(d.eval_every) + "\n";
  if (!d.seed.empty()) o += "  seed: " + value(d.seed) + "\n";
  FlowMap strategy;
  FlowMap local_sgd;
  if (!d.average_every.empty() && d.average_every != "0") {
    local_sgd.add("average_every", value(d.average_every));
  }
  local_sgd.addEntries(keep("native.strategy.local_sgd"));
  if (!local_sgd.empty()) strategy.add("local_sgd", local_sgd.str());
  if (d.data_split != "iid") strategy.add("data_split", value(d.data_split));
  if (d.compression == "topk") {
    strategy.add("compression",
                 FlowMap().add("topk", FlowMap().add("ratio", value(d.topk_ratio)).str()).str());
  } else if (d.compression == "powersgd") {
    strategy.add(
        "compression",
        FlowMap().add("powersgd", FlowMap().add("rank", value(d.powersgd_rank)).str()).str());
  } else if (d.compression != "none") {
    strategy.add("compression", value(d.compression));
  }
  FlowMap pipeline;
  if (!d.pipeline_stages.empty() && d.pipeline_stages != "0") {
    pipeline.add("stages", value(d.pipeline_stages)).add("micro_batches", value(d.micro_batches));
  }
  pipeline.addEntries(keep("native.strategy.pipeline"));
  if (!pipeline.empty()) strategy.add("pipeline", pipeline.str());
  FlowMap ps;
  if (!d.ps_servers.empty() && d.ps_servers != "0") {
    ps.add("servers", value(d.ps_servers)).add("mode", value(d.ps_mode));
    if (d.ps_mode == "async") ps.add("max_staleness", value(d.ps_max_staleness));
    if (d.ps_mode == "async" && !d.ps_max_lead.empty() && d.ps_max_lead != "0") {
      ps.add("max_lead", value(d.ps_max_lead));
    }
  }
  ps.addEntries(keep("native.strategy.parameter_server"));
  if (!ps.empty()) strategy.add("parameter_server", ps.str());
  strategy.addEntries(keep("native.strategy"));
  if (!strategy.empty()) o += "  strategy: " + strategy.str() + "\n";
  for (const std::string& entry : keep("native")) o += "  " + entry + "\n";
}

}  // namespace

std::optional<JobDraft> readJobDraft(std::string_view text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!root.IsMap()) return std::nullopt;
  JobDraft d;
  try {
    d.header_comment = leadingComment(text);
    readScalar(root, "name", &d.name);
    readScalar(root, "description", &d.description);
    readScalar(root, "launcher", &d.launcher);
    const YAML::Node command = child(root, "command");
    if (command.IsSequence()) {
      for (const auto& arg : command) d.command.push_back(arg.IsScalar() ? arg.Scalar() : "");
    } else if (command.IsDefined() && command.IsScalar()) {
      d.command = {command.Scalar()};
    }
    readScalar(root, "workdir", &d.workdir);
    readScalar(root, "python", &d.python);
    d.env = readPairs(child(root, "env"));
    const YAML::Node placement = child(root, "placement");
    d.use_placement = placement.IsDefined() && !has(root, "world_size");
    if (placement.IsSequence()) {
      for (const auto& entry : placement) {
        PlacementDraft p;
        p.ranks.clear();
        readScalar(entry, "agent", &p.agent);
        readScalar(entry, "ranks", &p.ranks);
        d.placement.push_back(std::move(p));
      }
    }
    readScalar(root, "world_size", &d.world_size);
    if (const YAML::Node slurm = child(root, "slurm"); slurm.IsDefined()) {
      YAML::Emitter out;
      out << YAML::BeginMap << YAML::Key << "slurm" << YAML::Value << slurm << YAML::EndMap;
      d.slurm_yaml = std::string(out.c_str()) + "\n";
    }
    if (const YAML::Node roles = child(root, "tensorflow"); roles.IsDefined()) {
      YAML::Emitter out;
      out << YAML::BeginMap << YAML::Key << "tensorflow" << YAML::Value << roles << YAML::EndMap;
      d.tensorflow_yaml = std::string(out.c_str()) + "\n";
    }
    readScalar(root, "backend", &d.backend);
    readScalar(child(root, "restart"), "max_restarts", &d.max_restarts);
    d.metric_patterns = readPairs(child(child(root, "metrics"), "patterns"));
    readScalar(root, "stop_grace_seconds", &d.stop_grace_seconds);
    const YAML::Node native = child(root, "native");
    d.has_native = native.IsDefined();
    if (native.IsMap()) readNative(native, &d.native);
    d.kept = findKeptKeys(root, text);
  } catch (const std::exception&) {
    // yaml-cpp throws on some odd trees; what was read so far still stands for the form.
  }
  return d;
}

std::string writeJobDraft(const JobDraft& d) {
  std::string o = d.header_comment;
  // The top-level entries the form has no field for go back after the key they followed.
  const auto keepAfter = [&](const char* key) {
    for (const KeptKey& k : d.kept) {
      if (k.section.empty() && k.after == key) o += k.text;
    }
  };
  keepAfter("");
  if (!d.name.empty()) o += "name: " + yamlString(d.name) + "\n";
  keepAfter("name");
  if (!d.description.empty()) o += "description: " + yamlString(d.description) + "\n";
  keepAfter("description");
  o += "launcher: " + (d.launcher.empty() ? std::string("''") : yamlValue(d.launcher)) + "\n";
  keepAfter("launcher");
  const bool native = d.launcher == "native";
  const bool known = job::parseLauncher(d.launcher).has_value();
  if (!native && (known || !d.command.empty())) {
    std::vector<std::string> args;
    for (const std::string& arg : d.command) args.push_back(yamlString(arg));
    o += "command: " + flowList(args) + "\n";
  }
  keepAfter("command");
  if (!d.workdir.empty()) o += "workdir: " + yamlString(d.workdir) + "\n";
  keepAfter("workdir");
  if (!native && !d.python.empty()) o += "python: " + yamlString(d.python) + "\n";
  keepAfter("python");
  if (d.launcher == "tensorflow") o += d.tensorflow_yaml;
  keepAfter("tensorflow");
  if (!d.env.empty()) {
    o += "env:\n";
    for (const auto& [name, text] : d.env)
      o += "  " + yamlKey(name) + ": " + yamlString(text) + "\n";
  }
  keepAfter("env");
  if (!d.slurm_yaml.empty()) {
    o += d.slurm_yaml;
  } else if (d.use_placement) {
    o += "placement:";
    if (d.placement.empty()) o += " []";
    o += "\n";
    for (const PlacementDraft& p : d.placement) {
      o += "  - agent: " + yamlString(p.agent) + "\n";
      o += "    ranks: " + (p.ranks.empty() ? std::string("''") : yamlValue(p.ranks)) + "\n";
    }
  } else {
    o += "world_size: " + (d.world_size.empty() ? std::string("''") : yamlValue(d.world_size)) +
         "\n";
  }
  for (const char* key : {"slurm", "placement", "world_size"}) keepAfter(key);
  if (!d.backend.empty()) o += "backend: " + yamlValue(d.backend) + "\n";
  keepAfter("backend");
  const std::vector<std::string> restart = keptIn(d.kept, "restart");
  if ((!d.max_restarts.empty() && d.max_restarts != "0") || !restart.empty()) {
    o += "restart:\n";
    if (!d.max_restarts.empty() && d.max_restarts != "0") {
      o += "  max_restarts: " + yamlValue(d.max_restarts) + "\n";
    }
    for (const std::string& entry : restart) o += "  " + entry + "\n";
  }
  keepAfter("restart");
  const std::vector<std::string> metrics = keptIn(d.kept, "metrics");
  if (!d.metric_patterns.empty() || !metrics.empty()) {
    o += "metrics:\n";
    if (!d.metric_patterns.empty()) o += "  patterns:\n";
    for (const auto& [name, regex] : d.metric_patterns) {
      o += "    " + yamlKey(name) + ": " + yamlString(regex) + "\n";
    }
    for (const std::string& entry : metrics) o += "  " + entry + "\n";
  }
  keepAfter("metrics");
  if (!d.stop_grace_seconds.empty() && d.stop_grace_seconds != "10") {
    o += "stop_grace_seconds: " + yamlValue(d.stop_grace_seconds) + "\n";
  }
  keepAfter("stop_grace_seconds");
  if (native || (!known && d.has_native)) writeNative(d.native, d.kept, &o);
  keepAfter("native");
  return o;
}

}  // namespace ringmaster::gui

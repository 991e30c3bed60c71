#include "ringmaster/train/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "ringmaster/util/closest_match.h"
#include "ringmaster/util/yaml_node.h"

namespace ringmaster::train {
namespace {

using yaml::describe;

// Walks the YAML tree and collects every problem; each names the dotted field and its line.
class ConfigParser {
 public:
  ConfigParser(int line_offset, int world_size)
      : line_offset_(line_offset), world_size_(world_size) {}

  Result<NativeConfig> parse(std::string_view text) {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      return invalidArgument("native (line " + std::to_string(e.mark.line + 1 + line_offset_) +
                             "): invalid YAML: " + e.msg);
    } catch (const std::exception& e) {
      return invalidArgument(std::string("native: invalid YAML: ") + e.what());
    }
    try {
      parseRoot(root);
    } catch (const std::exception& e) {  // yaml-cpp throws on odd trees; report, never leak
      report(root, "native", std::string("unexpected YAML structure: ") + e.what());
    }
    if (!errors_.empty()) return invalidArgument(joinErrors());
    return config_;
  }

 private:
  int lineOf(const YAML::Node& node) const {
    const int line = yaml::lineOf(node);
    return line == 0 ? 0 : line + line_offset_;
  }

  void report(const YAML::Node& at, const std::string& field, const std::string& message) {
    const int line = lineOf(at);
    std::string text = field;
    if (line > 0) text += " (line " + std::to_string(line) + ")";
    errors_.emplace_back(line, text + ": " + message);
  }

  // In line order, like a compiler's diagnostics.
  std::string joinErrors() {
    std::stable_sort(errors_.begin(), errors_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string all;
    for (const auto& [line, text] : errors_) all += (all.empty() ? "" : "\n") + text;
    return all;
  }

  // Checks `node` is a mapping with plain keys from `known`; records which keys it has.
  bool checkMapping(const YAML::Node& node, const std::string& field,
                    const std::vector<std::string>& known, std::set<std::string>* present) {
    if (!node.IsMap()) {
      report(node, field, "expected a mapping, got " + describe(node));
      return false;
    }
    for (const auto& item : node) {
      const YAML::Node& key = item.first;
      if (!key.IsScalar()) {
        report(key, field, "expected a plain name as key, got " + describe(key));
        continue;
      }
      const std::string name = key.Scalar();
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        std::string message = "unknown key '" + name + "'";
        const std::string suggestion = closestMatch(name, known);
        if (!suggestion.empty()) message += "; did you mean '" + suggestion + "'?";
        report(key, field + "." + name, message);
        continue;
      }
      if (!present->insert(name).second) {
        report(key, field + "." + name, "given twice");
      }
    }
    return true;
  }

  std::optional<int64_t> readInteger(const YAML::Node& node, const std::string& field,
                                     int64_t min) {
    long long value = 0;
    if (!node.IsScalar() || !YAML::convert<long long>::decode(node, value)) {
      report(node, field, "expected an integer, got " + describe(node));
      return std::nullopt;
    }
    if (value < min) {
      report(node, field,
             "expected an integer >= " + std::to_string(min) + ", got " + std::to_string(value));
      return std::nullopt;
    }
    return static_cast<int64_t>(value);
  }

  void readSize(const YAML::Node& node, const std::string& field, int64_t min, size_t* out) {
    if (auto v = readInteger(node, field, min)) *out = static_cast<size_t>(*v);
  }
  void readU64(const YAML::Node& node, const std::string& field, int64_t min, uint64_t* out) {
    if (auto v = readInteger(node, field, min)) *out = static_cast<uint64_t>(*v);
  }

  // A finite number in [min, max) (or [min, max] when max_inclusive); `expected` words the range.
  void readDouble(const YAML::Node& node, const std::string& field, double min, double max,
                  bool min_exclusive, const std::string& expected, double* out) {
    double value = 0.0;
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) || !std::isfinite(value)) {
      report(node, field, "expected " + expected + ", got " + describe(node));
      return;
    }
    if (value < min || (min_exclusive && value == min) || value >= max) {
      report(node, field, "expected " + expected + ", got " + node.Scalar());
      return;
    }
    *out = value;
  }

  void readBool(const YAML::Node& node, const std::string& field, bool* out) {
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
      report(node, field, "expected true or false, got " + describe(node));
      return;
    }
    *out = value;
  }

  void readString(const YAML::Node& node, const std::string& field, std::string* out) {
    if (!node.IsScalar() || node.Scalar().empty()) {
      report(node, field, "expected a non-empty string, got " + describe(node));
      return;
    }
    *out = node.Scalar();
  }

  // One of `choices`, converted with `parse`.
  template <typename T, typename Parse>
  void readChoice(const YAML::Node& node, const std::string& field,
                  const std::vector<std::string>& choices, Parse parse, T* out) {
    std::string list;
    for (const std::string& c : choices) list += (list.empty() ? "" : "|") + c;
    if (!node.IsScalar()) {
      report(node, field, "expected one of " + list + ", got " + describe(node));
      return;
    }
    const std::optional<T> value = parse(node.Scalar());
    if (!value) {
      std::string message = "expected one of " + list + ", got '" + node.Scalar() + "'";
      const std::string suggestion = closestMatch(node.Scalar(), choices);
      if (!suggestion.empty()) message += "; did you mean '" + suggestion + "'?";
      report(node, field, message);
      return;
    }
    *out = *value;
  }

  void parseRoot(const YAML::Node& root) {
    if (root.IsMap() && root["link_test"]) {
      parseLinkTest(root);
      return;
    }
    std::set<std::string> keys;
    if (!checkMapping(
            root, "native",
            {"model", "dataset", "batch_size", "epochs", "steps", "optimizer", "grad_accumulation",
             "clip_norm", "checkpoint", "eval_every", "seed", "strategy"},
            &keys)) {
      return;
    }
    NativeConfig& c = config_;
    if (keys.count("seed")) readU64(root["seed"], "native.seed", 0, &c.seed);
    c.dataset.seed = c.seed;
    if (keys.count("model")) parseModel(root["model"]);
    if (keys.count("dataset")) {
      parseDataset(root["dataset"]);
    } else {
      report(root, "native.dataset", "missing; expected e.g. {kind: synthetic, samples: 20000}");
    }
    if (keys.count("batch_size")) {
      readSize(root["batch_size"], "native.batch_size", 1, &c.batch_size);
    }
    if (keys.count("epochs")) readU64(root["epochs"], "native.epochs", 1, &c.epochs);
    if (keys.count("steps")) readU64(root["steps"], "native.steps", 1, &c.steps);
    if (keys.count("epochs") && keys.count("steps")) {
      report(root["steps"], "native.steps", "give either epochs or steps, not both");
    } else if (!keys.count("epochs") && !keys.count("steps")) {
      report(root, "native", "missing epochs or steps; expected e.g. 'epochs: 5' or 'steps: 1000'");
    }
    if (keys.count("optimizer")) parseOptimizer(root["optimizer"]);
    if (keys.count("grad_accumulation")) {
      readSize(root["grad_accumulation"], "native.grad_accumulation", 1, &c.grad_accumulation);
    }
    if (keys.count("clip_norm")) {
      readDouble(root["clip_norm"], "native.clip_norm", 0.0,
                 std::numeric_limits<double>::infinity(), false, "a number >= 0 (0 = off)",
                 &c.clip_norm);
    }
    if (keys.count("checkpoint")) parseCheckpoint(root["checkpoint"]);
    if (keys.count("eval_every")) {
      readU64(root["eval_every"], "native.eval_every", 0, &c.eval_every);
    }
    if (keys.count("strategy")) parseStrategy(root["strategy"]);
  }

  void parseLinkTest(const YAML::Node& root) {
    std::set<std::string> keys;
    if (!checkMapping(root, "native", {"link_test"}, &keys)) return;
    LinkTestConfig test;
    const YAML::Node node = root["link_test"];
    std::set<std::string> test_keys;
    if (checkMapping(node, "native.link_test", {"bytes", "repeats"}, &test_keys)) {
      if (test_keys.count("bytes"))
        readSize(node["bytes"], "native.link_test.bytes", 4, &test.bytes);
      if (test_keys.count("repeats")) {
        readU64(node["repeats"], "native.link_test.repeats", 1, &test.repeats);
      }
    }
    config_.link_test = test;
  }

  void parseStrategy(const YAML::Node& node) {
    std::set<std::string> keys;
    const std::string f = "native.strategy";
    if (!checkMapping(node, f,
                      {"local_sgd", "data_split", "compression", "parameter_server", "pipeline"},
                      &keys)) {
      return;
    }
    StrategyConfig& s = config_.strategy;
    if (keys.count("local_sgd")) {
      const YAML::Node local = node["local_sgd"];
      std::set<std::string> local_keys;
      if (checkMapping(local, f + ".local_sgd", {"average_every"}, &local_keys)) {
        if (local_keys.count("average_every")) {
          readU64(local["average_every"], f + ".local_sgd.average_every", 1, &s.average_every);
        } else {
          report(local, f + ".local_sgd.average_every",
                 "missing; expected the local steps between averagings, e.g. 8");
        }
      }
    }
    if (keys.count("data_split")) {
      readChoice(
          node["data_split"], f + ".data_split", {"iid", "by_label"},
          [](std::string_view v) -> std::optional<DataSplit> {
            if (v == "iid") return DataSplit::kIid;
            if (v == "by_label") return DataSplit::kByLabel;
            return std::nullopt;
          },
          &s.data_split);
    }
    if (keys.count("compression")) parseCompression(node["compression"], f + ".compression");
    if (s.localSgd() && s.compression != Compression::kNone) {
      report(node["compression"], f + ".compression",
             "compresses the gradient allreduce, which local_sgd does not do (it averages the "
             "parameters every average_every steps); use one or the other");
    }
    if (keys.count("parameter_server")) parseParameterServer(node, keys);
    if (keys.count("pipeline")) parsePipeline(node, keys);
  }

  // {stages: P, micro_batches: M}; `strategy` is the strategy mapping. Parsed after the model and
  // batch_size, which bound P and M.
  void parsePipeline(const YAML::Node& strategy, const std::set<std::string>& siblings) {
    const std::string f = "native.strategy.pipeline";
    const YAML::Node node = strategy["pipeline"];
    PipelineConfig& p = config_.strategy.pipeline;
    std::set<std::string> keys;
    if (!checkMapping(node, f, {"stages", "micro_batches"}, &keys)) return;
    const size_t layers = config_.model.hidden.size() + 1;
    if (keys.count("stages")) {
      if (auto v = readInteger(node["stages"], f + ".stages", 1)) {
        const auto stages = static_cast<size_t>(*v);
        if (stages > layers) {
          report(node["stages"], f + ".stages",
                 std::to_string(stages) + " stages for a model of " + std::to_string(layers) +
                     " layers (native.model.hidden plus the output layer); each stage needs at "
                     "least one layer");
        } else if (world_size_ > 0 && world_size_ % static_cast<int64_t>(stages) != 0) {
          report(node["stages"], f + ".stages",
                 std::to_string(stages) + " stages do not divide the job's world_size " +
                     std::to_string(world_size_) +
                     " (world_size = stages x data-parallel "
                     "replicas)");
        } else {
          p.stages = stages;
        }
      }
    } else {
      report(node, f + ".stages", "missing; expected the number of pipeline stages, e.g. 2");
    }
    if (keys.count("micro_batches")) {
      if (auto v = readInteger(node["micro_batches"], f + ".micro_batches", 1)) {
        if (static_cast<size_t>(*v) > config_.batch_size) {
          report(node["micro_batches"], f + ".micro_batches",
                 std::to_string(*v) + " micro-batches of a batch of " +
                     std::to_string(config_.batch_size) +
                     " samples (native.batch_size); expected 1 to " +
                     std::to_string(config_.batch_size));
        } else {
          p.micro_batches = static_cast<size_t>(*v);
        }
      }
    }
    // A pipeline stage holds a slice of the model and exchanges activations; the strategies below
    // exchange whole gradients or models, which no stage has.
    if (siblings.count("local_sgd")) {
      report(strategy["local_sgd"], "native.strategy.local_sgd",
             "cannot be combined with pipeline (stages exchange activations every micro-batch, "
             "not models every few steps); use one or the other");
    }
    if (siblings.count("compression") && config_.strategy.compression != Compression::kNone) {
      report(strategy["compression"], "native.strategy.compression",
             "cannot be combined with pipeline (activations and gradients between stages are "
             "sent uncompressed); use compression: none");
    }
    if (siblings.count("parameter_server")) {
      report(strategy["parameter_server"], "native.strategy.parameter_server",
             "cannot be combined with pipeline; use one or the other");
    }
    if (siblings.count("data_split") && config_.strategy.data_split != DataSplit::kIid) {
      report(strategy["data_split"], "native.strategy.data_split",
             "pipeline replicas draw iid batches; use data_split: iid");
    }
    if (config_.grad_accumulation > 1) {
      report(node, f,
             "needs native.grad_accumulation: 1 (a pipeline splits each batch into micro_batches "
             "already)");
    }
  }

  // {servers: S, mode: sync | async, max_staleness: K, max_lead: L}; `strategy` is the strategy
  // mapping.
  void parseParameterServer(const YAML::Node& strategy, const std::set<std::string>& siblings) {
    const std::string f = "native.strategy.parameter_server";
    const YAML::Node node = strategy["parameter_server"];
    ParameterServerConfig& ps = config_.strategy.parameter_server;
    std::set<std::string> keys;
    if (!checkMapping(node, f, {"servers", "mode", "max_staleness", "max_lead"}, &keys)) return;
    if (keys.count("servers")) {
      ps.servers_line = lineOf(node["servers"]);
      if (auto v = readInteger(node["servers"], f + ".servers", 1)) {
        if (world_size_ == 1) {
          report(node["servers"], f + ".servers",
                 "a parameter server needs a job of 2 ranks or more (servers and workers); the "
                 "job has 1");
        } else if (world_size_ > 0 && *v >= world_size_) {
          report(node["servers"], f + ".servers",
                 std::to_string(*v) + (*v == 1 ? " server leaves" : " servers leave") +
                     " no worker among the job's " + std::to_string(world_size_) +
                     " ranks; expected 1 to " + std::to_string(world_size_ - 1));
        } else {
          ps.servers = static_cast<int>(std::min<int64_t>(*v, 1 << 20));
        }
      }
    } else {
      report(node, f + ".servers", "missing; expected the number of server ranks, e.g. 1");
    }
    if (keys.count("mode")) {
      readChoice(
          node["mode"], f + ".mode", {"sync", "async"},
          [](std::string_view v) -> std::optional<PsMode> {
            if (v == "sync") return PsMode::kSync;
            if (v == "async") return PsMode::kAsync;
            return std::nullopt;
          },
          &ps.mode);
    }
    // The async mode's own fields: with sync, a field set is a mistake worth naming.
    auto asyncOnly = [&](const char* key, uint64_t* out, const char* why_not_sync) {
      if (!keys.count(key)) return;
      if (ps.mode != PsMode::kAsync) {
        report(node[key], f + "." + key,
               std::string("only used with mode: async (") + why_not_sync + ")");
      } else {
        readU64(node[key], f + "." + key, 0, out);
      }
    };
    asyncOnly("max_staleness", &ps.max_staleness, "sync waits for every worker: nothing is stale");
    asyncOnly("max_lead", &ps.max_lead, "sync workers take every step together");
    // Servers apply the optimizer to the pushed gradients; the other strategies change what is
    // exchanged or when, which the servers do not do (yet).
    if (siblings.count("local_sgd")) {
      report(strategy["local_sgd"], "native.strategy.local_sgd",
             "cannot be combined with parameter_server (workers there apply no update of their "
             "own to average); use one or the other");
    }
    if (siblings.count("compression") && config_.strategy.compression != Compression::kNone) {
      report(strategy["compression"], "native.strategy.compression",
             "compresses the gradient allreduce; parameter_server pushes are sent uncompressed "
             "(use compression: none)");
    }
    if (config_.clip_norm > 0.0) {
      report(node, f,
             "needs native.clip_norm: 0: clipping by the global norm needs the whole averaged "
             "gradient, and each server holds a shard of it");
    }
    // Servers keep their shard's optimizer state in memory only: a checkpoint of the workers
    // alone could not be resumed faithfully, so a restarted attempt starts over instead.
    if (config_.checkpoint.every_steps > 0) {
      report(node, f,
             "does not checkpoint (yet): set native.checkpoint.every_steps: 0 (a restarted "
             "attempt starts over from step 0)");
    }
  }

  // none | fp16 | {topk: {ratio: r}} | {powersgd: {rank: k}}
  void parseCompression(const YAML::Node& node, const std::string& f) {
    StrategyConfig& s = config_.strategy;
    const std::string expected =
        "expected none, fp16, {topk: {ratio: r}} or {powersgd: {rank: k}}, got ";
    if (node.IsScalar()) {
      const std::string& v = node.Scalar();
      if (v == "none" || v == "fp16") {
        s.compression = v == "fp16" ? Compression::kFp16 : Compression::kNone;
      } else {
        std::string message = expected + "'" + v + "'";
        const std::string suggestion = closestMatch(v, {"none", "fp16", "topk", "powersgd"});
        if (!suggestion.empty()) message += "; did you mean '" + suggestion + "'?";
        report(node, f, message);
      }
      return;
    }
    std::set<std::string> keys;
    if (!checkMapping(node, f, {"topk", "powersgd"}, &keys)) return;
    if (keys.empty()) {
      report(node, f, expected + "an empty mapping");
      return;
    }
    if (keys.size() > 1) {
      report(node, f, "give one of topk and powersgd, not both");
      return;
    }
    if (keys.count("powersgd")) {
      s.compression = Compression::kPowerSgd;
      const YAML::Node power = node["powersgd"];
      std::set<std::string> power_keys;
      if (!checkMapping(power, f + ".powersgd", {"rank"}, &power_keys)) return;
      if (power_keys.count("rank")) {
        readSize(power["rank"], f + ".powersgd.rank", 1, &s.powersgd_rank);
      } else {
        report(power, f + ".powersgd.rank",
               "missing; expected the rank of the approximation, e.g. 2");
      }
      return;
    }
    s.compression = Compression::kTopK;
    const YAML::Node topk = node["topk"];
    std::set<std::string> topk_keys;
    if (!checkMapping(topk, f + ".topk", {"ratio"}, &topk_keys)) return;
    if (topk_keys.count("ratio")) {
      readDouble(topk["ratio"], f + ".topk.ratio", 0.0, std::nextafter(1.0, 2.0), true,
                 "a fraction in (0, 1]", &s.topk_ratio);
    } else {
      report(topk, f + ".topk.ratio", "missing; expected the fraction of entries sent, e.g. 0.01");
    }
  }

  void parseModel(const YAML::Node& node) {
    std::set<std::string> keys;
    const std::string f = "native.model";
    if (!checkMapping(node, f, {"kind", "hidden", "activation", "task"}, &keys)) return;
    ModelConfig& m = config_.model;
    if (keys.count("kind")) {
      const YAML::Node kind = node["kind"];
      if (!kind.IsScalar() || kind.Scalar() != "mlp") {
        report(kind, f + ".kind", "expected mlp (the only model kind), got " + describe(kind));
      }
    }
    if (keys.count("hidden")) {
      const YAML::Node hidden = node["hidden"];
      if (!hidden.IsSequence()) {
        report(hidden, f + ".hidden", "expected a list of layer widths, got " + describe(hidden));
      } else {
        m.hidden.clear();
        for (size_t i = 0; i < hidden.size(); ++i) {
          size_t width = 0;
          readSize(hidden[i], f + ".hidden[" + std::to_string(i) + "]", 1, &width);
          m.hidden.push_back(width);
        }
      }
    }
    if (keys.count("activation")) {
      readChoice(node["activation"], f + ".activation", {"relu", "gelu", "tanh"}, parseActivation,
                 &m.activation);
    }
    if (keys.count("task")) {
      readChoice(node["task"], f + ".task", {"classification", "regression"}, parseTask, &m.task);
    }
  }

  void parseDataset(const YAML::Node& node) {
    std::set<std::string> keys;
    const std::string f = "native.dataset";
    if (!checkMapping(
            node, f,
            {"kind", "samples", "features", "classes", "seed", "path", "label_column",
             "standardize", "eval_fraction", "images", "labels", "test_images", "test_labels"},
            &keys)) {
      return;
    }
    DatasetConfig& d = config_.dataset;
    if (keys.count("kind")) {
      readChoice(
          node["kind"], f + ".kind", {"synthetic", "csv", "digits", "idx", "fashion_mnist"},
          [](std::string_view s) -> std::optional<DatasetKind> {
            if (s == "synthetic") return DatasetKind::kSynthetic;
            if (s == "csv") return DatasetKind::kCsv;
            if (s == "digits") return DatasetKind::kDigits;
            if (s == "idx") return DatasetKind::kIdx;
            if (s == "fashion_mnist") return DatasetKind::kFashionMnist;
            return std::nullopt;
          },
          &d.kind);
    } else {
      report(node, f + ".kind", "missing; expected synthetic, csv, digits, idx or fashion_mnist");
      return;
    }
    const bool csv = d.kind == DatasetKind::kCsv;
    const bool synthetic = d.kind == DatasetKind::kSynthetic;
    const bool idx = d.kind == DatasetKind::kIdx;
    const auto onlyFor = [&](const char* key, bool allowed, const char* kind) {
      if (keys.count(key) && !allowed) {
        report(node[key], f + "." + key, std::string("only used with kind: ") + kind);
        return false;
      }
      return keys.count(key) > 0;
    };
    if (onlyFor("samples", synthetic, "synthetic")) {
      readSize(node["samples"], f + ".samples", 1, &d.samples);
    }
    if (onlyFor("features", synthetic, "synthetic")) {
      readSize(node["features"], f + ".features", 1, &d.features);
    }
    if (onlyFor("classes", synthetic, "synthetic")) {
      readSize(node["classes"], f + ".classes", 2, &d.classes);
    }
    if (onlyFor("seed", !csv, "synthetic, digits, idx or fashion_mnist"))
      readU64(node["seed"], f + ".seed", 0, &d.seed);
    if (onlyFor("path", csv, "csv")) readString(node["path"], f + ".path", &d.path);
    if (onlyFor("label_column", csv, "csv")) {
      readString(node["label_column"], f + ".label_column", &d.label_column);
    }
    if (onlyFor("standardize", !synthetic, "csv, digits, idx or fashion_mnist")) {
      readBool(node["standardize"], f + ".standardize", &d.standardize);
    }
    if (csv && !keys.count("path")) {
      report(node, f + ".path", "missing; kind csv needs the path of the CSV file");
    }
    for (const auto& [key, value] :
         {std::pair{"images", &d.images}, std::pair{"labels", &d.labels},
          std::pair{"test_images", &d.test_images}, std::pair{"test_labels", &d.test_labels}}) {
      if (onlyFor(key, idx, "idx")) readString(node[key], f + "." + key, value);
    }
    if (idx) {
      for (const char* key : {"images", "labels"}) {
        if (!keys.count(key)) {
          report(node, f + "." + key,
                 std::string("missing; kind idx needs the path of the ") + key + " file");
        }
      }
      if (keys.count("test_images") != keys.count("test_labels")) {
        const char* missing = keys.count("test_images") ? "test_labels" : "test_images";
        report(node, f + "." + missing,
               "missing; a test set needs both test_images and test_labels");
      }
    }
    if (keys.count("eval_fraction") && d.hasTestSet()) {
      report(node["eval_fraction"], f + ".eval_fraction",
             d.kind == DatasetKind::kFashionMnist
                 ? "not used: fashion_mnist is evaluated on its 10,000 test images"
                 : "not used: the job is evaluated on test_images");
    } else if (keys.count("eval_fraction")) {
      readDouble(node["eval_fraction"], f + ".eval_fraction", 0.0, 1.0, false,
                 "a fraction in [0, 1)", &d.eval_fraction);
    }
  }

  void parseOptimizer(const YAML::Node& node) {
    std::set<std::string> keys;
    const std::string f = "native.optimizer";
    if (!checkMapping(node, f,
                      {"name", "lr", "momentum", "nesterov", "beta1", "beta2", "eps",
                       "weight_decay", "warmup_steps", "schedule"},
                      &keys)) {
      return;
    }
    OptimizerOptions& o = config_.optimizer;
    if (keys.count("name")) {
      readChoice(node["name"], f + ".name", {"sgd", "adam"}, parseOptimizerKind, &o.kind);
    }
    const double inf = std::numeric_limits<double>::infinity();
    if (keys.count("lr")) {
      readDouble(node["lr"], f + ".lr", 0.0, inf, true, "a positive number", &o.lr);
    }
    if (keys.count("weight_decay")) {
      readDouble(node["weight_decay"], f + ".weight_decay", 0.0, inf, false, "a number >= 0",
                 &o.weight_decay);
    }
    if (keys.count("warmup_steps")) {
      readU64(node["warmup_steps"], f + ".warmup_steps", 0, &o.warmup_steps);
    }
    if (keys.count("schedule")) {
      readChoice(node["schedule"], f + ".schedule", {"cosine", "constant"}, parseLrSchedule,
                 &o.schedule);
    }
    const bool sgd = o.kind == OptimizerKind::kSgd;
    for (const char* key : {"momentum", "nesterov"}) {
      if (keys.count(key) && !sgd) report(node[key], f + "." + key, "only used with name: sgd");
    }
    for (const char* key : {"beta1", "beta2", "eps"}) {
      if (keys.count(key) && sgd) report(node[key], f + "." + key, "only used with name: adam");
    }
    if (sgd && keys.count("momentum")) {
      readDouble(node["momentum"], f + ".momentum", 0.0, 1.0, false, "a number in [0, 1)",
                 &o.momentum);
    }
    if (sgd && keys.count("nesterov")) {
      readBool(node["nesterov"], f + ".nesterov", &o.nesterov);
      if (o.nesterov && o.momentum == 0.0) {
        report(node["nesterov"], f + ".nesterov", "needs momentum > 0");
      }
    }
    if (!sgd && keys.count("beta1")) {
      readDouble(node["beta1"], f + ".beta1", 0.0, 1.0, false, "a number in [0, 1)", &o.beta1);
    }
    if (!sgd && keys.count("beta2")) {
      readDouble(node["beta2"], f + ".beta2", 0.0, 1.0, false, "a number in [0, 1)", &o.beta2);
    }
    if (!sgd && keys.count("eps")) {
      readDouble(node["eps"], f + ".eps", 0.0, inf, true, "a positive number", &o.epsilon);
    }
  }

  void parseCheckpoint(const YAML::Node& node) {
    std::set<std::string> keys;
    const std::string f = "native.checkpoint";
    if (!checkMapping(node, f, {"every_steps", "dir", "keep"}, &keys)) return;
    CheckpointConfig& c = config_.checkpoint;
    if (keys.count("every_steps")) {
      readU64(node["every_steps"], f + ".every_steps", 0, &c.every_steps);
    }
    if (keys.count("dir")) readString(node["dir"], f + ".dir", &c.dir);
    if (keys.count("keep")) readSize(node["keep"], f + ".keep", 0, &c.keep);
  }

  int line_offset_;
  int world_size_;  // 0: not known
  NativeConfig config_;
  std::vector<std::pair<int, std::string>> errors_;  // (line, message)
};

}  // namespace

Result<NativeConfig> parseNativeConfig(std::string_view yaml_text, int line_offset,
                                       int world_size) {
  return ConfigParser(line_offset, world_size).parse(yaml_text);
}

}  // namespace ringmaster::train

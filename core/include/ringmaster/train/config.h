#pragma once
// NativeConfig: the `native:` section of a job spec, which configures the built-in trainer.
//
//   native:
//     model: {kind: mlp, hidden: [128, 64], activation: relu, task: classification}
//     dataset: {kind: synthetic, samples: 20000, features: 32, classes: 4, seed: 1}
//     # or     {kind: csv, path: /data/train.csv, label_column: label, standardize: true}
//     batch_size: 64            # per rank
//     epochs: 5                 # or steps: N
//     optimizer: {name: sgd, lr: 0.05, momentum: 0.9, weight_decay: 0.0, warmup_steps: 0,
//                 schedule: cosine}
//     grad_accumulation: 1
//     clip_norm: 0              # 0 = off
//     checkpoint: {every_steps: 100}
//     eval_every: 1             # epochs
//     seed: 1
//     strategy:                 # optional; default: gradients averaged by allreduce every step
//       local_sgd: {average_every: 8}   # or absent
//       data_split: iid                 # iid | by_label
//       compression: none               # none | fp16 | {topk: {ratio: 0.01}} |
//                                       # {powersgd: {rank: 2}}
//       parameter_server: {servers: 1, mode: sync, max_staleness: 4}   # or absent
//       pipeline: {stages: 2, micro_batches: 4}   # or absent; world_size = stages x replicas
//
// Thread safety: all functions are pure and may be called from any thread.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/train/model.h"
#include "ringmaster/train/optimizer.h"
#include "ringmaster/util/result.h"

namespace ringmaster::train {

struct ModelConfig {
  // kind: mlp (the only kind so far).
  std::vector<size_t> hidden = {128, 64};     // hidden: [widths], each > 0; [] = linear model
  Activation activation = Activation::kRelu;  // activation: relu|gelu|tanh
  Task task = Task::kClassification;          // task: classification|regression
};

// digits: the 8x8 handwritten digits built into the trainer (1797 samples, 64 features, 10 classes,
// as scikit-learn's load_digits; resources/datasets/digits.csv). idx: image and label files in
// the MNIST format (data.h's loadIdx). fashion_mnist: Debian's dataset-fashion-mnist, trained on
// its 60,000 images and evaluated on its 10,000 test images.
enum class DatasetKind { kSynthetic, kCsv, kDigits, kIdx, kFashionMnist };

struct DatasetConfig {
  DatasetKind kind = DatasetKind::kSynthetic;  // kind: synthetic|csv|digits|idx|fashion_mnist
  // synthetic
  size_t samples = 20000;  // > 0
  size_t features = 32;    // > 0
  size_t classes = 4;      // >= 2 (classification)
  uint64_t seed = 1;       // data seed; defaults to the top-level seed when not given
  // csv
  std::string path;                    // required for csv
  std::string label_column = "label";  // label_column
  bool standardize = true;             // with training-split statistics (all but synthetic)
  // idx: images and labels required; test_images and test_labels both or neither
  std::string images;
  std::string labels;
  std::string test_images;
  std::string test_labels;
  // all without a test set (synthetic, csv, digits, idx without test files)
  double eval_fraction = 0.1;  // held out for evaluation, in [0, 1)

  bool hasTestSet() const { return kind == DatasetKind::kFashionMnist || !test_images.empty(); }
};

struct CheckpointConfig {
  uint64_t every_steps = 0;  // 0 = no periodic checkpoints
  std::string dir;           // empty: the worker chooses (e.g. under the job's run directory)
  size_t keep = 3;           // newest checkpoints kept; 0 = keep all
};

// How the ranks share the data and combine their work (see trainer.h and docs/strategies.md).
enum class DataSplit {
  kIid,      // DistributedSampler: every rank draws from the whole training split
  kByLabel,  // rank r holds the samples whose label l has l % world_size == r (byLabelShard)
};
enum class Compression {
  kNone,
  kFp16,  // gradients sent as IEEE half (allreduce of 2-byte values), with error feedback
  kTopK,  // the ratio * n largest-magnitude entries as (index, value) pairs, with error feedback
  kPowerSgd,  // each weight gradient as a rank-r product P Q^T, with error feedback (powersgd.h)
};

// native.strategy.parameter_server (see train/parameter_server.h): the last `servers` ranks hold
// shards of the parameters and apply the optimizer; the others are workers that push gradients
// and pull parameters. sync: one update per step from the average of every worker's gradient.
// async: each push is applied as it comes; one staler than max_staleness versions is refused.
enum class PsMode { kSync, kAsync };

struct ParameterServerConfig {
  int servers = 0;  // 0: not a parameter-server job; otherwise >= 1 and < world_size
  PsMode mode = PsMode::kSync;
  uint64_t max_staleness = 4;  // async only: server versions a push may lag behind
  // async only: pushes a worker may be ahead of the others (the upper median of the workers
  // still going, so one straggler holds nobody back); 0: no bound. A worker on the servers' own
  // host, or on a faster link, otherwise takes most of the job's pushes, and its share of the
  // data most of the training.
  uint64_t max_lead = 0;
  int servers_line = 0;  // line of `servers:` (for errors that need the world size)
};

// native.strategy.pipeline (see train/pipeline.h and the worker's pipeline_worker.h): the MLP's
// layers split over `stages` ranks (GPipe: every micro-batch forward, then every one backward);
// world_size = stages x D runs D data-parallel replicas of the pipeline (hybrid).
struct PipelineConfig {
  size_t stages = 0;         // 0: no pipeline; otherwise 1..layers, dividing world_size
  size_t micro_batches = 1;  // per batch, 1..batch_size
};

struct StrategyConfig {
  // 0: synchronous allreduce of the gradients every step. H > 0 (local_sgd.average_every): every
  // rank takes H optimizer steps on its own, then the parameters are averaged by one allreduce.
  uint64_t average_every = 0;
  DataSplit data_split = DataSplit::kIid;
  Compression compression = Compression::kNone;  // of the gradient allreduce
  double topk_ratio = 0.01;                      // in (0, 1]
  size_t powersgd_rank = 2;                      // >= 1
  ParameterServerConfig parameter_server;
  PipelineConfig pipeline;

  bool localSgd() const { return average_every > 0; }
  bool parameterServer() const { return parameter_server.servers > 0; }
  bool pipelined() const { return pipeline.stages > 0; }
  // Anything but today's plain allreduce of float32 gradients.
  bool isDefault() const {
    return average_every == 0 && data_split == DataSplit::kIid &&
           compression == Compression::kNone && !parameterServer() && !pipelined();
  }
};

// `native: {link_test: {bytes: N, repeats: R}}`: no training. The ranks measure the link
// between them through the communicator jobs use (allreduce of one float for the latency, of
// `bytes` for the bandwidth, best of `repeats`) and print {"step": 1, "link_latency_us": ...,
// "link_gbps": ...}. The cluster preflight runs it for each pair of agents.
struct LinkTestConfig {
  size_t bytes = size_t{16} << 20;
  uint64_t repeats = 5;
};

struct NativeConfig {
  std::optional<LinkTestConfig> link_test;  // set: a link test, nothing else is read
  ModelConfig model;
  DatasetConfig dataset;
  size_t batch_size = 64;  // per rank
  // Exactly one of epochs / steps is given (> 0); the other stays 0.
  uint64_t epochs = 0;
  uint64_t steps = 0;  // optimizer steps
  // name: sgd|adam, lr, momentum, nesterov, beta1, beta2, eps, weight_decay, warmup_steps,
  // schedule: cosine|constant. total_steps is not read from YAML: the trainer derives it.
  OptimizerOptions optimizer;
  size_t grad_accumulation = 1;  // micro-batches per optimizer step, >= 1
  double clip_norm = 0.0;        // global L2 norm; 0 = off
  CheckpointConfig checkpoint;
  uint64_t eval_every = 1;  // epochs; 0 = only at the end
  uint64_t seed = 1;        // model init and sampler shuffling
  StrategyConfig strategy;
};

// Parses and validates the `native:` mapping given as YAML text (JobSpec::native_yaml). Unknown
// keys, wrong types and out-of-range values are errors; all of them are reported at once, one per
// line of the Status message, each naming the field and the line:
//   "native.optimizer.lr (line 12): expected a positive number, got -1"
// `line_offset` is added to line numbers within `yaml_text` (JobSpec::native_line makes them the
// spec file's lines). `world_size` > 0 also checks what depends on the rank count
// (parameter_server.servers < world_size); 0: not known here. Never throws.
Result<NativeConfig> parseNativeConfig(std::string_view yaml_text, int line_offset = 0,
                                       int world_size = 0);

}  // namespace ringmaster::train

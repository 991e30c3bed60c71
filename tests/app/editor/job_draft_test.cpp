// The editor's Qt-free parts: shell words, YAML scalars, and the draft that the form holds.
#include "editor/job_draft.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "editor/shell_words.h"
#include "editor/spec_check.h"
#include "editor/yaml_scalar.h"
#include "ringmaster/job/spec.h"

namespace ringmaster::gui {
namespace {

TEST(ShellWords, SplitsQuotedWordsLikeAShell) {
  const ShellSplit split =
      splitShellWords(R"(python  train.py --name 'my run' "a \"b\"" c\ d '' 'it'\''s')");
  EXPECT_EQ(split.warning, "");
  EXPECT_EQ(split.words, (std::vector<std::string>{"python", "train.py", "--name", "my run",
                                                   "a \"b\"", "c d", "", "it's"}));
}

TEST(ShellWords, ReportsAnUnterminatedQuoteAndClosesIt) {
  const ShellSplit split = splitShellWords("echo 'hello world");
  EXPECT_NE(split.warning.find("unterminated"), std::string::npos);
  EXPECT_EQ(split.words, (std::vector<std::string>{"echo", "hello world"}));
}

TEST(ShellWords, JoinThenSplitGivesTheWordsBack) {
  const std::vector<std::vector<std::string>> cases = {
      {"/usr/bin/env", "bash", "-c", "echo \"rank $RANK of $WORLD_SIZE\""},
      {"python", "it's", "", "a b", "back\\slash", "tab\there", "$HOME", "#not-a-comment"},
      {}};
  for (const auto& words : cases) {
    const std::string line = joinShellWords(words);
    const ShellSplit split = splitShellWords(line);
    EXPECT_EQ(split.words, words) << line;
    EXPECT_EQ(split.warning, "") << line;
  }
}

// Whatever the scalar writer produces, yaml-cpp must read back the same string.
TEST(YamlScalar, StringsReadBackUnchanged) {
  const std::vector<std::string> values = {
      "plain",       "train.py",   "--epochs", "10",   "1e-4",    "true",   "no",
      "null",        "~",          "",         "a: b", "# hash",  "it's",   "say \"x\"",
      "-",           "- x",        "[x]",      "{y}",  "line\nb", "tab\tc", "loss=([-+0-9.eE]+)",
      "step (\\d+)", "  padded  ", "@at",      "%pc"};
  for (const std::string& value : values) {
    const std::string yaml = "k: " + yamlString(value) + "\nl: [" + yamlString(value) + "]\n";
    const YAML::Node node = YAML::Load(yaml);
    EXPECT_EQ(node["k"].Scalar(), value) << yaml;
    EXPECT_EQ(node["l"][0].Scalar(), value) << yaml;
    // Numbers and booleans are quoted so that a string stays a string.
    if (value == "10" || value == "true" || value == "1e-4") {
      EXPECT_NE(yamlString(value).front(), value.front()) << value;
    }
  }
}

TEST(YamlScalar, ValuesStayAsTyped) {
  EXPECT_EQ(yamlValue("0.05"), "0.05");
  EXPECT_EQ(yamlValue("-1"), "-1");
  EXPECT_EQ(yamlValue("many"), "many");
  EXPECT_EQ(YAML::Load("k: " + yamlValue("a b: c"))["k"].Scalar(), "a b: c");
}

TEST(JobDraft, UnreadableTextHasNoDraft) {
  EXPECT_FALSE(readJobDraft("name: [unclosed").has_value());
  EXPECT_FALSE(readJobDraft("").has_value());
  EXPECT_FALSE(readJobDraft("- a list\n").has_value());
  EXPECT_TRUE(readJobDraft("name: x\n").has_value());
}

TEST(JobDraft, KeepsTheLeadingCommentAndWritesAValidSpec) {
  JobDraft draft;
  draft.header_comment = "# first\n# second\n";
  draft.name = "x";
  const std::string yaml = writeJobDraft(draft);
  EXPECT_EQ(yaml.rfind("# first\n# second\nname: x\n", 0), 0u) << yaml;
  EXPECT_TRUE(checkSpecText(yaml, "x.yaml").empty())
      << job::formatDiagnostics(checkSpecText(yaml, "x.yaml"));
  EXPECT_EQ(readJobDraft(yaml)->header_comment, draft.header_comment);
}

// Issue 61: a key the form has no field for (misspelt, or one it does not show) is written back
// by the form, where it was: at the top level as written, comments included; in a section as a
// flow entry. It stays a problem for the validator.
TEST(JobDraft, KeepsTheKeysTheFormHasNoFieldFor) {
  const std::string yaml =
      "# header\nname: x\n# why frobnicate\nfrobnicate: 3   # as typed\nlauncher: native\n"
      "world_size: 1\nrestart:\n  max_restarts: 2\n  exclude_failed_hosts: true\n"
      "native:\n  model: {kind: mlp, hidden: [8], widht: 4}\n"
      "  dataset: {kind: synthetic, samples: 100, features: 4, classes: 2, seed: 1}\n"
      "  epochs: 1\n  optimizer: {name: sgd, lrr: 0.1}\n  strategy: {pipline: {stages: 2}}\n"
      "  epoch: 3\nextra_list:\n  - a\n  - b\n";
  const std::optional<JobDraft> draft = readJobDraft(yaml);
  ASSERT_TRUE(draft.has_value());
  const std::string out = writeJobDraft(*draft);
  EXPECT_EQ(out.rfind("# header\nname: x\n# why frobnicate\nfrobnicate: 3   # as typed\n"
                      "launcher: native\n",
                      0),
            0u)
      << out;
  EXPECT_NE(out.find("restart:\n  max_restarts: 2\n  exclude_failed_hosts: true\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("widht: 4}"), std::string::npos) << out;
  EXPECT_NE(out.find("lrr: 0.1}"), std::string::npos) << out;
  EXPECT_NE(out.find("strategy: {pipline: {stages: 2}}"), std::string::npos) << out;
  EXPECT_NE(out.find("\n  epoch: 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\nextra_list:\n  - a\n  - b\n"), std::string::npos) << out;
  std::vector<std::string> fields;
  for (const job::SpecDiagnostic& d : checkSpecText(out, "x.yaml")) fields.push_back(d.field);
  EXPECT_NE(std::find(fields.begin(), fields.end(), "frobnicate"), fields.end())
      << ::testing::PrintToString(fields);
  // Read and written again, nothing moves.
  EXPECT_EQ(writeJobDraft(*readJobDraft(out)), out);
}

// A spec in one flow mapping has no lines to cut apart: the key is kept all the same.
TEST(JobDraft, KeepsAnUnknownKeyOfAFlowMapping) {
  const std::string out =
      writeJobDraft(*readJobDraft("{name: x, frobnicate: 3, launcher: command, command: [a]}"));
  EXPECT_NE(out.find("frobnicate: 3\n"), std::string::npos) << out;
}

TEST(SpecCheck, NativeDiagnosticsKeepTheTrainersFieldLineAndMessage) {
  const std::string yaml =
      "name: x\nlauncher: native\nworld_size: 1\nnative:\n"
      "  dataset: {kind: synthetic}\n  epochs: 1\n  optimizer: {lr: -1}\n";
  const auto problems = checkSpecText(yaml, "x.yaml");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "native.optimizer.lr");
  EXPECT_EQ(problems[0].line, 7);
  EXPECT_EQ(problems[0].message, "expected a positive number, got -1");
  EXPECT_EQ(problemLine(problems[0]),
            "line 7: native.optimizer.lr: expected a positive number, got -1");
}

}  // namespace
}  // namespace ringmaster::gui

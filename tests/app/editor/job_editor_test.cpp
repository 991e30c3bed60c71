// JobEditor against core's own validator and the templates shipped in resources/jobs.
#include "editor/job_editor.h"

#include <gtest/gtest.h>

#include <QAbstractButton>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QRadioButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>
#include <functional>
#include <sstream>

#include "editor/error_outline.h"
#include "editor/form_fields.h"
#include "editor/yaml_text_edit.h"
#include "ringmaster/client/agent_status.h"
#include "ringmaster/job/spec.h"
#include "ringmaster/train/config.h"
#include "table_copy.h"

namespace ringmaster::gui {
namespace {

const QString kResources = QStringLiteral(RM_SOURCE_DIR "/resources");

QString readText(const QString& path) {
  QFile file(path);
  EXPECT_TRUE(file.open(QIODevice::ReadOnly | QIODevice::Text)) << path.toStdString();
  return QString::fromUtf8(file.readAll());
}

job::JobSpec parseOk(const QString& yaml) {
  job::SpecParseResult parsed = job::parseJobSpec(yaml.toStdString(), "t.yaml");
  EXPECT_TRUE(parsed.ok()) << job::formatDiagnostics(parsed.errors) << yaml.toStdString();
  return parsed.ok() ? *parsed.spec : job::JobSpec{};
}

train::NativeConfig nativeOk(const job::JobSpec& spec) {
  auto config = train::parseNativeConfig(spec.native_yaml, spec.native_line);
  EXPECT_TRUE(config.isOk()) << config.status().message();
  return config.isOk() ? *config : train::NativeConfig{};
}

// Field by field, so that a failure names the field.
void expectSameSpec(const job::JobSpec& a, const job::JobSpec& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.launcher, b.launcher);
  EXPECT_EQ(a.command, b.command);
  EXPECT_EQ(a.workdir, b.workdir);
  EXPECT_EQ(a.env, b.env);
  ASSERT_EQ(a.placement.size(), b.placement.size());
  for (size_t i = 0; i < a.placement.size(); ++i) {
    EXPECT_EQ(a.placement[i].agent, b.placement[i].agent) << i;
    EXPECT_EQ(a.placement[i].ranks, b.placement[i].ranks) << i;
  }
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.world_size_line != 0, b.world_size_line != 0);  // world_size vs placement
  EXPECT_EQ(a.backend, b.backend);
  EXPECT_EQ(a.restart.max_restarts, b.restart.max_restarts);
  ASSERT_EQ(a.metric_patterns.size(), b.metric_patterns.size());
  for (size_t i = 0; i < a.metric_patterns.size(); ++i) {
    EXPECT_EQ(a.metric_patterns[i].name, b.metric_patterns[i].name);
    EXPECT_EQ(a.metric_patterns[i].regex, b.metric_patterns[i].regex);
  }
  EXPECT_EQ(a.stop_grace_seconds, b.stop_grace_seconds);
  EXPECT_EQ(a.native_yaml.empty(), b.native_yaml.empty());
}

void expectSameNative(const train::NativeConfig& a, const train::NativeConfig& b) {
  EXPECT_EQ(a.model.hidden, b.model.hidden);
  EXPECT_EQ(a.model.activation, b.model.activation);
  EXPECT_EQ(a.model.task, b.model.task);
  EXPECT_EQ(a.dataset.kind, b.dataset.kind);
  EXPECT_EQ(a.dataset.samples, b.dataset.samples);
  EXPECT_EQ(a.dataset.features, b.dataset.features);
  EXPECT_EQ(a.dataset.classes, b.dataset.classes);
  EXPECT_EQ(a.dataset.seed, b.dataset.seed);
  EXPECT_EQ(a.dataset.path, b.dataset.path);
  EXPECT_EQ(a.dataset.label_column, b.dataset.label_column);
  EXPECT_EQ(a.dataset.standardize, b.dataset.standardize);
  EXPECT_EQ(a.dataset.eval_fraction, b.dataset.eval_fraction);
  EXPECT_EQ(a.batch_size, b.batch_size);
  EXPECT_EQ(a.epochs, b.epochs);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.optimizer.kind, b.optimizer.kind);
  EXPECT_EQ(a.optimizer.lr, b.optimizer.lr);
  EXPECT_EQ(a.optimizer.momentum, b.optimizer.momentum);
  EXPECT_EQ(a.optimizer.nesterov, b.optimizer.nesterov);
  EXPECT_EQ(a.optimizer.beta1, b.optimizer.beta1);
  EXPECT_EQ(a.optimizer.beta2, b.optimizer.beta2);
  EXPECT_EQ(a.optimizer.epsilon, b.optimizer.epsilon);
  EXPECT_EQ(a.optimizer.weight_decay, b.optimizer.weight_decay);
  EXPECT_EQ(a.optimizer.warmup_steps, b.optimizer.warmup_steps);
  EXPECT_EQ(a.optimizer.schedule, b.optimizer.schedule);
  EXPECT_EQ(a.grad_accumulation, b.grad_accumulation);
  EXPECT_EQ(a.clip_norm, b.clip_norm);
  EXPECT_EQ(a.checkpoint.every_steps, b.checkpoint.every_steps);
  EXPECT_EQ(a.checkpoint.dir, b.checkpoint.dir);
  EXPECT_EQ(a.checkpoint.keep, b.checkpoint.keep);
  EXPECT_EQ(a.strategy.average_every, b.strategy.average_every);
  EXPECT_EQ(a.strategy.data_split, b.strategy.data_split);
  EXPECT_EQ(a.strategy.compression, b.strategy.compression);
  EXPECT_EQ(a.strategy.topk_ratio, b.strategy.topk_ratio);
  EXPECT_EQ(a.strategy.pipeline.stages, b.strategy.pipeline.stages);
  EXPECT_EQ(a.strategy.pipeline.micro_batches, b.strategy.pipeline.micro_batches);
  EXPECT_EQ(a.strategy.parameter_server.servers, b.strategy.parameter_server.servers);
  EXPECT_EQ(a.strategy.parameter_server.mode, b.strategy.parameter_server.mode);
  EXPECT_EQ(a.strategy.parameter_server.max_staleness, b.strategy.parameter_server.max_staleness);
  EXPECT_EQ(a.strategy.parameter_server.max_lead, b.strategy.parameter_server.max_lead);
  EXPECT_EQ(a.eval_every, b.eval_every);
  EXPECT_EQ(a.seed, b.seed);
}

// What ringmasterctl reports for `yaml` (app/ctl/submit_command.cpp checkSpec), computed here
// independently of the editor: parseJobSpec, then parseNativeConfig's lines.
std::vector<std::string> ctlDiagnostics(const QString& yaml, const std::string& file) {
  std::vector<std::string> out;
  const job::SpecParseResult parsed = job::parseJobSpec(yaml.toStdString(), file);
  for (const auto& d : parsed.errors) out.push_back(d.field + ": " + d.message);
  if (parsed.ok() && parsed.spec->launcher == job::Launcher::kNative) {
    auto config = train::parseNativeConfig(parsed.spec->native_yaml, parsed.spec->native_line);
    if (!config.isOk()) {
      std::istringstream lines(config.status().message());
      std::string line;
      while (std::getline(lines, line)) {
        // "native.optimizer.lr (line 12): message" -> "native.optimizer.lr: message"
        const size_t paren = line.find(" (line ");
        const size_t close = line.find("): ");
        out.push_back(paren != std::string::npos && close != std::string::npos
                          ? line.substr(0, paren) + line.substr(close + 1)
                          : line);
      }
    }
  }
  return out;
}

std::vector<std::string> editorDiagnostics(const JobEditor& editor) {
  std::vector<std::string> out;
  for (const auto& d : editor.problems()) out.push_back(d.field + ": " + d.message);
  return out;
}

template <typename T>
T* field(const JobEditor& editor, const char* name) {
  T* widget = editor.findChild<T*>(QString::fromLatin1(name));
  EXPECT_NE(widget, nullptr) << name;
  return widget;
}

// As a person does it: each of these emits the signal a real edit emits.
void typeInto(QLineEdit* edit, const QString& text) {
  edit->setText(text);
  Q_EMIT edit->textEdited(text);
}

void choose(ChoiceField* combo, const QString& text) {
  const int index = combo->findText(text);
  ASSERT_GE(index, 0) << text.toStdString();
  combo->setCurrentIndex(index);
  Q_EMIT combo->activated(index);
}

bool outlined(const QWidget* widget) {
  if (!widget || !widget->parentWidget()) return false;
  for (const ErrorOutline* outline : widget->parentWidget()->findChildren<ErrorOutline*>()) {
    if (outline->target() == widget && outline->isActive()) return true;
  }
  return false;
}

QPushButton* launchButton(const JobEditor& editor) {
  return editor.findChild<QPushButton*>(QStringLiteral("launch"));
}

QString nativeSpec(const QString& native_tail) {
  return QStringLiteral(
             "name: t\nlauncher: native\nworld_size: 2\nnative:\n"
             "  model: {kind: mlp, hidden: [8], activation: relu, task: classification}\n"
             "  dataset: {kind: synthetic, samples: 100, features: 4, classes: 2, seed: 1}\n"
             "  batch_size: 8\n  epochs: 1\n") +
         native_tail;
}

// An agent that answers, with 4 free slots of 4.
client::AgentStatus onlineAgent(const std::string& name) {
  client::AgentStatus agent;
  agent.name = name;
  agent.state = client::AgentState::kOnline;
  agent.inventory.emplace();
  agent.inventory->set_slots(4);
  agent.inventory->set_slots_free(4);
  return agent;
}

class JobEditorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    QStandardPaths::setTestModeEnabled(true);  // QSettings under ~/.qttest, not the user's
    QCoreApplication::setOrganizationName(QStringLiteral("ringmaster-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("job_editor_test"));
    QSettings().remove(JobEditor::kRecentFilesKey);
  }
};

TEST_F(JobEditorTest, FindsEveryTemplate) {
  JobEditor editor(kResources);
  const QStringList paths = editor.templatePaths();
  EXPECT_TRUE(paths.contains(kResources + "/jobs/demo.yaml"));
  EXPECT_TRUE(paths.contains(kResources + "/jobs/examples/torchrun_ddp.yaml"));
  EXPECT_TRUE(paths.contains(kResources + "/jobs/strategies/topk.yaml"));
  EXPECT_GE(paths.size(), 5);
  // A fresh editor starts from a spec that can be launched as it is.
  EXPECT_TRUE(editor.isValid()) << editor.yaml().toStdString();
  EXPECT_EQ(field<QLineEdit>(editor, "name")->text(), "new-job");
}

// Each template: YAML -> form -> YAML (the form rewrites it) -> form gives the same spec and the
// same native config, field by field, and the rewritten YAML is a fixed point.
TEST_F(JobEditorTest, TemplatesRoundTripThroughTheForm) {
  JobEditor editor(kResources);
  for (const QString& path : editor.templatePaths()) {
    SCOPED_TRACE(path.toStdString());
    const QString original = readText(path);
    ASSERT_TRUE(editor.openFile(path)) << editor.lastError().toStdString();
    EXPECT_EQ(editor.yaml(), original);  // opening never rewrites
    EXPECT_TRUE(editor.isValid());
    EXPECT_TRUE(launchButton(editor)->isEnabled());

    // A form edit that ends where it started makes the form rewrite the whole YAML.
    auto* name = field<QLineEdit>(editor, "name");
    const QString job_name = name->text();
    typeInto(name, job_name + "x");
    typeInto(name, job_name);
    const QString rewritten = editor.yaml();
    EXPECT_NE(rewritten, original);
    EXPECT_TRUE(editor.isValid()) << rewritten.toStdString();

    const job::JobSpec before = parseOk(original);
    const job::JobSpec after = parseOk(rewritten);
    expectSameSpec(before, after);
    if (before.launcher == job::Launcher::kNative) {
      expectSameNative(nativeOk(before), nativeOk(after));
    }
    // The header comment stays.
    EXPECT_TRUE(rewritten.startsWith(original.left(original.indexOf('\n'))))
        << rewritten.toStdString();

    // Back into the form and out again: nothing changes any more.
    editor.setYaml(rewritten, path);
    typeInto(name, job_name + "x");
    typeInto(name, job_name);
    EXPECT_EQ(editor.yaml(), rewritten);
  }
}

// Issue 27: the Strategy group's parameter-server fields write native.strategy.parameter_server
// (mode and max_staleness shown only when they apply), and as many servers as the job's ranks
// is marked on the servers field with the parser's words.
TEST_F(JobEditorTest, ParameterServerFieldsWriteTheStrategy) {
  JobEditor editor(kResources);
  ASSERT_TRUE(editor.newFromTemplate(kResources + "/jobs/strategies/allreduce.yaml"));
  const auto native = [&] { return nativeOk(parseOk(editor.yaml())); };
  auto* servers = field<IntField>(editor, "native.strategy.parameter_server.servers");
  auto* mode = field<ChoiceField>(editor, "native.strategy.parameter_server.mode");
  auto* staleness = field<IntField>(editor, "native.strategy.parameter_server.max_staleness");
  auto* lead = field<IntField>(editor, "native.strategy.parameter_server.max_lead");
  EXPECT_FALSE(native().strategy.parameterServer());
  EXPECT_FALSE(mode->isVisibleTo(&editor));
  servers->setValue(1);
  EXPECT_EQ(native().strategy.parameter_server.servers, 1);
  EXPECT_EQ(native().strategy.parameter_server.mode, train::PsMode::kSync);
  EXPECT_TRUE(mode->isVisibleTo(&editor));
  EXPECT_FALSE(staleness->isVisibleTo(&editor));
  EXPECT_FALSE(lead->isVisibleTo(&editor));
  choose(mode, "async");
  EXPECT_TRUE(staleness->isVisibleTo(&editor));
  EXPECT_TRUE(lead->isVisibleTo(&editor));
  staleness->setValue(2);
  EXPECT_EQ(native().strategy.parameter_server.mode, train::PsMode::kAsync);
  EXPECT_EQ(native().strategy.parameter_server.max_staleness, 2u);
  EXPECT_EQ(native().strategy.parameter_server.max_lead, 0u);
  EXPECT_EQ(editor.yaml().indexOf("max_lead"), -1);  // 0, the default, is not written
  lead->setValue(8);
  EXPECT_EQ(native().strategy.parameter_server.max_lead, 8u);
  servers->setValue(4);  // the template's world_size
  EXPECT_FALSE(editor.isValid());
  EXPECT_NE(editor.fieldProblem("native.strategy.parameter_server.servers")
                .indexOf("4 servers leave no worker among the job's 4 ranks"),
            -1)
      << editor.fieldProblem("native.strategy.parameter_server.servers").toStdString();
}

// Each form field changes the YAML, and the parsed spec, as it says.
// An unsaved spec outlives a crash of the app: kept a second after the edit, back in the next
// editor marked modified; gone once saved.
TEST_F(JobEditorTest, AnUnsavedDraftIsRestoredAfterACrash) {
  QString typed;
  {
    JobEditor crashed(kResources);
    ASSERT_TRUE(crashed.newFromTemplate(kResources + "/jobs/demo.yaml"));
    typeInto(field<QLineEdit>(crashed, "name"), "my-draft");
    typed = crashed.yaml();
    QElapsedTimer waited;
    waited.start();
    while (waited.elapsed() < 1500) QApplication::processEvents();
  }  // no maybeSave(): as when the app is killed
  JobEditor next(kResources);
  ASSERT_TRUE(next.restoreDraft());
  EXPECT_EQ(next.yaml(), typed);
  EXPECT_EQ(parseOk(next.yaml()).name, "my-draft");
  QTemporaryDir dir;
  ASSERT_TRUE(next.saveFile(dir.filePath("saved.yaml")));
  JobEditor after(kResources);
  EXPECT_FALSE(after.restoreDraft());
}

// Every field of the form says what it is for (a tooltip), whatever launcher shows it.
TEST_F(JobEditorTest, EveryFieldHasATooltip) {
  JobEditor editor(kResources);
  QStringList without;
  for (QWidget* w : editor.findChildren<QWidget*>()) {
    const QString name = w->objectName();
    const bool input = qobject_cast<QLineEdit*>(w) || qobject_cast<QAbstractSpinBox*>(w) ||
                       qobject_cast<QComboBox*>(w) || qobject_cast<QTableWidget*>(w) ||
                       qobject_cast<QAbstractButton*>(w);
    if (!input || name.isEmpty() || name.startsWith("qt_") ||
        !name.contains(QRegularExpression("^[a-z_]+[.a-z_\\[\\]0-9]*$"))) {
      continue;
    }
    if (w->toolTip().isEmpty()) without << name;
  }
  EXPECT_TRUE(without.isEmpty()) << without.join(", ").toStdString();
}

TEST_F(JobEditorTest, EveryFormFieldChangesTheSpec) {
  JobEditor editor(kResources);
  // The quick demo's synthetic data set has the most fields.
  ASSERT_TRUE(editor.newFromTemplate(kResources + "/jobs/examples/quick_demo.yaml"));
  const auto spec = [&] { return parseOk(editor.yaml()); };
  const auto native = [&] { return nativeOk(spec()); };

  typeInto(field<QLineEdit>(editor, "name"), "renamed.job");
  EXPECT_EQ(spec().name, "renamed.job");
  typeInto(field<QLineEdit>(editor, "description"), "what it is: a test's job");
  EXPECT_EQ(spec().description, "what it is: a test's job");
  typeInto(field<QLineEdit>(editor, "workdir"), "/srv/run dir");
  EXPECT_EQ(spec().workdir, "/srv/run dir");
  choose(field<ChoiceField>(editor, "backend"), "gloo");
  EXPECT_EQ(spec().backend, job::Backend::kGloo);
  field<IntField>(editor, "restart.max_restarts")->setValue(4);
  EXPECT_EQ(spec().restart.max_restarts, 4);
  field<IntField>(editor, "stop_grace_seconds")->setValue(45);
  EXPECT_EQ(spec().stop_grace_seconds, 45);
  field<IntField>(editor, "world_size")->setValue(3);
  EXPECT_EQ(spec().world_size, 3);

  // native: model
  typeInto(field<QLineEdit>(editor, "native.model.hidden"), "64, 32,16");
  EXPECT_EQ(native().model.hidden, (std::vector<size_t>{64, 32, 16}));
  choose(field<ChoiceField>(editor, "native.model.activation"), "gelu");
  EXPECT_EQ(native().model.activation, train::Activation::kGelu);
  choose(field<ChoiceField>(editor, "native.model.task"), "regression");
  EXPECT_EQ(native().model.task, train::Task::kRegression);
  choose(field<ChoiceField>(editor, "native.model.task"), "classification");
  // native: synthetic dataset
  field<IntField>(editor, "native.dataset.samples")->setValue(1234);
  EXPECT_EQ(native().dataset.samples, 1234u);
  field<IntField>(editor, "native.dataset.features")->setValue(7);
  EXPECT_EQ(native().dataset.features, 7u);
  field<IntField>(editor, "native.dataset.classes")->setValue(5);
  EXPECT_EQ(native().dataset.classes, 5u);
  field<IntField>(editor, "native.dataset.seed")->setValue(99);
  EXPECT_EQ(native().dataset.seed, 99u);
  typeInto(field<QLineEdit>(editor, "native.dataset.eval_fraction"), "0.25");
  EXPECT_EQ(native().dataset.eval_fraction, 0.25);
  // native: training
  field<IntField>(editor, "native.batch_size")->setValue(32);
  EXPECT_EQ(native().batch_size, 32u);
  field<IntField>(editor, "native.length")->setValue(3);
  EXPECT_EQ(native().epochs, 3u);
  choose(field<ChoiceField>(editor, "native.length_unit"), "steps");
  EXPECT_EQ(native().steps, 3u);
  EXPECT_EQ(native().epochs, 0u);
  field<IntField>(editor, "native.grad_accumulation")->setValue(2);
  EXPECT_EQ(native().grad_accumulation, 2u);
  typeInto(field<QLineEdit>(editor, "native.clip_norm"), "1.5");
  EXPECT_EQ(native().clip_norm, 1.5);
  field<IntField>(editor, "native.seed")->setValue(7);
  EXPECT_EQ(native().seed, 7u);
  // native: checkpoints and evaluation
  field<IntField>(editor, "native.checkpoint.every_steps")->setValue(50);
  EXPECT_EQ(native().checkpoint.every_steps, 50u);
  typeInto(field<QLineEdit>(editor, "native.checkpoint.dir"), "/tmp/ckpt");
  EXPECT_EQ(native().checkpoint.dir, "/tmp/ckpt");
  field<IntField>(editor, "native.checkpoint.keep")->setValue(5);
  EXPECT_EQ(native().checkpoint.keep, 5u);
  field<IntField>(editor, "native.eval_every")->setValue(0);
  EXPECT_EQ(native().eval_every, 0u);
  // native: optimizer (sgd, then adam)
  typeInto(field<QLineEdit>(editor, "native.optimizer.lr"), "0.2");
  EXPECT_EQ(native().optimizer.lr, 0.2);
  typeInto(field<QLineEdit>(editor, "native.optimizer.momentum"), "0.5");
  EXPECT_EQ(native().optimizer.momentum, 0.5);
  choose(field<ChoiceField>(editor, "native.optimizer.nesterov"), "true");
  EXPECT_TRUE(native().optimizer.nesterov);
  typeInto(field<QLineEdit>(editor, "native.optimizer.weight_decay"), "0.01");
  EXPECT_EQ(native().optimizer.weight_decay, 0.01);
  field<IntField>(editor, "native.optimizer.warmup_steps")->setValue(10);
  EXPECT_EQ(native().optimizer.warmup_steps, 10u);
  choose(field<ChoiceField>(editor, "native.optimizer.schedule"), "constant");
  EXPECT_EQ(native().optimizer.schedule, train::LrSchedule::kConstant);
  choose(field<ChoiceField>(editor, "native.optimizer.name"), "adam");
  EXPECT_EQ(native().optimizer.kind, train::OptimizerKind::kAdam);
  EXPECT_FALSE(field<QLineEdit>(editor, "native.optimizer.momentum")->isVisibleTo(&editor));
  typeInto(field<QLineEdit>(editor, "native.optimizer.beta1"), "0.8");
  EXPECT_EQ(native().optimizer.beta1, 0.8);
  typeInto(field<QLineEdit>(editor, "native.optimizer.beta2"), "0.99");
  EXPECT_EQ(native().optimizer.beta2, 0.99);
  typeInto(field<QLineEdit>(editor, "native.optimizer.eps"), "1e-6");
  EXPECT_EQ(native().optimizer.epsilon, 1e-6);
  // native: csv dataset
  choose(field<ChoiceField>(editor, "native.dataset.kind"), "csv");
  EXPECT_FALSE(editor.isValid());  // a csv dataset needs its path
  EXPECT_NE(editor.fieldProblem("native.dataset.path").indexOf("missing"), -1);
  typeInto(field<QLineEdit>(editor, "native.dataset.path"), "/data/train.csv");
  typeInto(field<QLineEdit>(editor, "native.dataset.label_column"), "y");
  choose(field<ChoiceField>(editor, "native.dataset.standardize"), "false");
  EXPECT_EQ(native().dataset.kind, train::DatasetKind::kCsv);
  EXPECT_EQ(native().dataset.path, "/data/train.csv");
  EXPECT_EQ(native().dataset.label_column, "y");
  EXPECT_FALSE(native().dataset.standardize);
  // native: IDX files with a test set (nothing held out), then Fashion-MNIST
  choose(field<ChoiceField>(editor, "native.dataset.kind"), "idx");
  EXPECT_FALSE(editor.isValid());  // images and labels are needed
  typeInto(field<QLineEdit>(editor, "native.dataset.images"), "/d/train-img.gz");
  typeInto(field<QLineEdit>(editor, "native.dataset.labels"), "/d/train-lab.gz");
  typeInto(field<QLineEdit>(editor, "native.dataset.test_images"), "/d/test-img.gz");
  typeInto(field<QLineEdit>(editor, "native.dataset.test_labels"), "/d/test-lab.gz");
  EXPECT_EQ(native().dataset.kind, train::DatasetKind::kIdx);
  EXPECT_EQ(native().dataset.images, "/d/train-img.gz");
  EXPECT_EQ(native().dataset.labels, "/d/train-lab.gz");
  EXPECT_EQ(native().dataset.test_images, "/d/test-img.gz");
  EXPECT_EQ(native().dataset.test_labels, "/d/test-lab.gz");
  EXPECT_FALSE(field<QLineEdit>(editor, "native.dataset.eval_fraction")->isVisibleTo(&editor));
  choose(field<ChoiceField>(editor, "native.dataset.kind"), "fashion_mnist");
  EXPECT_EQ(native().dataset.kind, train::DatasetKind::kFashionMnist);
  EXPECT_FALSE(field<QLineEdit>(editor, "native.dataset.images")->isVisibleTo(&editor));
  choose(field<ChoiceField>(editor, "native.dataset.kind"), "csv");

  // env and metric patterns: rows typed into the tables
  auto* env = field<QTableWidget>(editor, "env");
  env->insertRow(0);
  env->setItem(0, 0, new QTableWidgetItem);
  env->setItem(0, 1, new QTableWidgetItem);
  env->item(0, 0)->setText("NCCL_DEBUG");
  env->item(0, 1)->setText("INFO");
  EXPECT_EQ(spec().env, (std::vector<std::pair<std::string, std::string>>{{"NCCL_DEBUG", "INFO"}}));
  auto* metrics = field<QTableWidget>(editor, "metrics.patterns");
  metrics->insertRow(0);
  metrics->setItem(0, 0, new QTableWidgetItem);
  metrics->setItem(0, 1, new QTableWidgetItem);
  metrics->item(0, 0)->setText("acc");
  metrics->item(0, 1)->setText(R"(acc=([0-9.]+))");
  ASSERT_EQ(spec().metric_patterns.size(), 1u);
  EXPECT_EQ(spec().metric_patterns[0].name, "acc");
  EXPECT_EQ(spec().metric_patterns[0].regex, R"(acc=([0-9.]+))");

  // launcher and command
  choose(field<ChoiceField>(editor, "launcher"), "torchrun");
  EXPECT_FALSE(editor.isValid());  // torchrun needs a command
  typeInto(field<QLineEdit>(editor, "command"), R"(python train.py --name 'my run' --steps 2000)");
  EXPECT_EQ(spec().launcher, job::Launcher::kTorchrun);
  EXPECT_EQ(spec().command, (std::vector<std::string>{"python", "train.py", "--name", "my run",
                                                      "--steps", "2000"}));
  EXPECT_TRUE(spec().native_yaml.empty());
  choose(field<ChoiceField>(editor, "launcher"), "command");
  EXPECT_EQ(spec().launcher, job::Launcher::kCommand);

  // placement by agent, with the cluster's agents offered
  client::AgentStatus node;
  node.name = "gpu-node-1";
  node.state = client::AgentState::kOnline;
  node.inventory.emplace();
  node.inventory->set_slots(4);
  node.inventory->set_slots_free(3);
  node.inventory->add_gpus()->set_index(0);
  node.inventory->add_gpus()->set_index(1);
  editor.setAgents({node});
  editor.findChild<QRadioButton*>(QStringLiteral("placement.by_agent"))->click();
  EXPECT_FALSE(editor.isValid());  // no agent yet
  editor.findChild<QPushButton*>(QStringLiteral("placement.add"))->click();
  auto* ranks = field<IntField>(editor, "placement[0].ranks");
  ranks->setValue(2);
  const job::JobSpec placed = spec();
  ASSERT_EQ(placed.placement.size(), 1u);
  EXPECT_EQ(placed.placement[0].agent, "gpu-node-1");  // the free agent is suggested
  EXPECT_EQ(placed.placement[0].ranks, 2);
  EXPECT_EQ(placed.world_size_line, 0);
  auto* table = field<QTableWidget>(editor, "placement");
  EXPECT_EQ(table->item(0, 2)->text(), "free 3/4 slots, 2 GPUs");
  // What launching would give each rank, before anything is launched.
  ASSERT_TRUE(editor.isValid()) << editor.yaml().toStdString();
  auto* preview = editor.findChild<QTreeWidget*>(QStringLiteral("launchPreview"));
  ASSERT_NE(preview, nullptr);
  ASSERT_EQ(preview->topLevelItemCount(), 2);
  EXPECT_EQ(preview->topLevelItem(1)->text(0), "1");  // rank
  EXPECT_EQ(preview->topLevelItem(1)->text(1), "gpu-node-1");
  EXPECT_EQ(preview->topLevelItem(1)->text(3), "1");  // LOCAL_RANK
  // A preflight of those agents is one click away, never in the launch's way.
  auto* check = editor.findChild<QPushButton*>(QStringLiteral("checkAgents"));
  ASSERT_NE(check, nullptr);
  QStringList checked;
  QObject::connect(&editor, &JobEditor::checkAgentsRequested,
                   [&](const QStringList& agents) { checked = agents; });
  check->click();
  EXPECT_EQ(checked, QStringList{"gpu-node-1"});
  // More ranks than free slots, or an agent the cluster does not have: refused here, on the
  // placement's line, not by a modal at launch.
  ranks->setValue(4);
  EXPECT_FALSE(editor.isValid());
  EXPECT_NE(editor.fieldProblem("placement[0].ranks").indexOf("free"), -1)
      << editor.fieldProblem("placement[0].ranks").toStdString();
  ranks->setValue(2);
  field<QComboBox>(editor, "placement[0].agent")->setCurrentText("node9");
  EXPECT_EQ(spec().placement[0].agent, "node9");
  EXPECT_EQ(table->item(0, 2)->text(), "not in the cluster file");
  EXPECT_FALSE(editor.isValid());
  EXPECT_NE(editor.fieldProblem("placement[0].agent").indexOf("node9"), -1)
      << editor.fieldProblem("placement[0].agent").toStdString();
  EXPECT_EQ(preview->topLevelItemCount(), 0);
  // An agent that does not answer is said to be so.
  node.state = client::AgentState::kUnreachable;
  node.reason = "connection refused";
  editor.setAgents({node});
  field<QComboBox>(editor, "placement[0].agent")->setCurrentText("gpu-node-1");
  EXPECT_NE(editor.fieldProblem("placement[0].agent").indexOf("unreachable"), -1)
      << editor.fieldProblem("placement[0].agent").toStdString();
}

struct BadInput {
  const char* what;
  QString yaml;
  const char* field;  // where the message must show; "" when no form field stands for it
};

// Each bad input shows the validator's own message on its field and in problems(), and Launch
// stays disabled.
// The launcher box offers every contract; a tensorflow job's roles (tensorflow:, which the form
// does not edit) survive form edits, and leave with the launcher that reads them.
TEST_F(JobEditorTest, TheLauncherBoxOffersTensorflowAndDeepspeed) {
  JobEditor editor(kResources);
  editor.setYaml(
      "name: tf\nlauncher: tensorflow\ncommand: [train.py]\nworld_size: 3\n"
      "tensorflow: {chief: true, ps: 1}\n",
      "tf.yaml");
  const auto spec = [&] { return parseOk(editor.yaml()); };
  auto* launcher = field<ChoiceField>(editor, "launcher");
  for (const char* kind : {"native", "torchrun", "command", "tensorflow", "deepspeed"}) {
    EXPECT_GE(launcher->findText(QString::fromLatin1(kind)), 0) << kind;
  }
  typeInto(field<QLineEdit>(editor, "name"), "tf-renamed");
  EXPECT_EQ(spec().name, "tf-renamed");
  EXPECT_EQ(spec().launcher, job::Launcher::kTensorflow);
  EXPECT_TRUE(spec().tensorflow.chief);
  EXPECT_EQ(spec().tensorflow.ps, 1);
  choose(launcher, "deepspeed");
  EXPECT_EQ(spec().launcher, job::Launcher::kDeepspeed);
  EXPECT_EQ(spec().command, std::vector<std::string>{"train.py"});
  EXPECT_EQ(editor.yaml().indexOf("tensorflow:"), -1) << editor.yaml().toStdString();
}

TEST_F(JobEditorTest, BadInputShowsTheValidatorsMessageOnItsField) {
  const std::vector<BadInput> cases = {
      {"world_size many", "name: t\nlauncher: command\ncommand: [a]\nworld_size: many\n",
       "world_size"},
      {"negative ranks",
       "name: t\nlauncher: command\ncommand: [a]\nplacement:\n  - agent: n1\n    ranks: -2\n",
       "placement[0].ranks"},
      {"bad native lr", nativeSpec("  optimizer: {name: sgd, lr: -1}\n"), "native.optimizer.lr"},
      {"empty torchrun command", "name: t\nlauncher: torchrun\ncommand: []\nworld_size: 1\n",
       "command"},
      {"bad job name", "name: my job\nlauncher: command\ncommand: [a]\nworld_size: 1\n", "name"},
      {"relative workdir", "name: t\nlauncher: command\ncommand: [a]\nworld_size: 1\nworkdir: x\n",
       "workdir"},
      {"reserved env", "name: t\nlauncher: command\ncommand: [a]\nworld_size: 1\nenv:\n  RANK: 1\n",
       "env.RANK"},
      {"regex without group",
       "name: t\nlauncher: command\ncommand: [a]\nworld_size: 1\nmetrics:\n  patterns:\n"
       "    loss: 'loss=1'\n",
       "metrics.patterns.loss"},
      {"unknown backend", "name: t\nlauncher: command\ncommand: [a]\nworld_size: 1\nbackend: ncl\n",
       "backend"},
      {"bad native batch", nativeSpec("  batch_size: 0\n").replace("  batch_size: 8\n", ""),
       "native.batch_size"},
      {"unknown native key", nativeSpec("  optimiser: {lr: 1}\n"), "native"},
      {"unknown key", "name: t\nlauncher: command\ncommand: [a]\nwrld_size: 2\nworld_size: 1\n",
       ""},
  };
  JobEditor editor(kResources);
  QSignalSpy launched(&editor, &JobEditor::launchRequested);
  for (const BadInput& c : cases) {
    SCOPED_TRACE(c.what);
    editor.setYaml(c.yaml, QStringLiteral("bad.yaml"));
    const std::vector<std::string> expected = ctlDiagnostics(c.yaml, "bad.yaml");
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(editorDiagnostics(editor), expected);
    EXPECT_FALSE(editor.isValid());
    EXPECT_FALSE(launchButton(editor)->isEnabled());
    launchButton(editor)->click();
    EXPECT_EQ(launched.count(), 0);

    // The problems list shows each one with its line.
    auto* list = editor.findChild<QListWidget*>(QStringLiteral("problems"));
    ASSERT_EQ(list->count(), static_cast<int>(expected.size()));
    const job::SpecDiagnostic first = editor.problems().front();
    EXPECT_TRUE(list->item(0)->text().startsWith(QStringLiteral("line %1: ").arg(first.line)))
        << list->item(0)->text().toStdString();
    EXPECT_NE(list->item(0)->text().indexOf(QString::fromStdString(first.message)), -1);

    if (c.field[0] == '\0') {
      EXPECT_EQ(editor.fieldWidget(QString::fromStdString(first.field)), nullptr);
      continue;
    }
    const QString problem = editor.fieldProblem(QString::fromLatin1(c.field));
    EXPECT_NE(problem.indexOf(QString::fromStdString(first.message)), -1)
        << problem.toStdString() << " vs " << first.message;
    QWidget* widget = editor.fieldWidget(QString::fromLatin1(c.field));
    ASSERT_NE(widget, nullptr);
    EXPECT_EQ(widget->toolTip(), problem);
    EXPECT_TRUE(outlined(widget));
  }
  // Fixed in the YAML tab: the outline and the problem go away.
  editor.setYaml("name: t\nlauncher: command\ncommand: [a]\nworld_size: 1\n", "ok.yaml");
  EXPECT_TRUE(editor.problems().empty());
  EXPECT_FALSE(outlined(editor.fieldWidget("world_size")));
}

TEST_F(JobEditorTest, BadValuesSurviveTheFormUntilEdited) {
  JobEditor editor(kResources);
  editor.setYaml("name: t\nlauncher: command\ncommand: [a]\nworld_size: many\n", "x.yaml");
  auto* world_size = field<IntField>(editor, "world_size");
  EXPECT_EQ(world_size->text(), "many");  // shown as written
  // Another field edited: the bad value is written back unchanged, still reported.
  typeInto(field<QLineEdit>(editor, "name"), "t2");
  EXPECT_NE(editor.yaml().indexOf("world_size: many"), -1) << editor.yaml().toStdString();
  EXPECT_FALSE(editor.isValid());
  // The person steps the value: it becomes a number and the problem is gone.
  world_size->stepBy(2);
  EXPECT_FALSE(world_size->isRaw());
  EXPECT_TRUE(editor.isValid()) << editor.yaml().toStdString();
}

// Issue 61: one form edit rewrote the YAML without a misspelt `frobnicate: 3` and the bar turned
// "ready to launch". The key survives every form edit, still flagged, and Launch stays blocked.
TEST_F(JobEditorTest, AFormEditKeepsAKeyItDoesNotKnow) {
  JobEditor editor(kResources);
  editor.setYaml(nativeSpec("  optimizer: {name: sgd, lr: 0.1}\n") + "frobnicate: 3\n", "x.yaml");
  const auto flagged = [&] {
    for (const job::SpecDiagnostic& d : editor.problems()) {
      if (d.field == "frobnicate") return true;
    }
    return false;
  };
  ASSERT_TRUE(flagged()) << ::testing::PrintToString(editorDiagnostics(editor));
  const std::vector<std::function<void()>> edits = {
      [&] { typeInto(field<QLineEdit>(editor, "name"), "t2"); },
      [&] { field<IntField>(editor, "world_size")->stepBy(1); },
      [&] { choose(field<ChoiceField>(editor, "native.optimizer.name"), "adam"); },
      [&] { typeInto(field<QLineEdit>(editor, "native.optimizer.lr"), "0.01"); },
  };
  for (size_t i = 0; i < edits.size(); ++i) {
    SCOPED_TRACE(i);
    edits[i]();
    EXPECT_NE(editor.yaml().indexOf("\nfrobnicate: 3\n"), -1) << editor.yaml().toStdString();
    EXPECT_TRUE(flagged()) << ::testing::PrintToString(editorDiagnostics(editor));
    EXPECT_FALSE(editor.isValid());
    EXPECT_FALSE(launchButton(editor)->isEnabled());
  }
  EXPECT_NE(editor.yaml().indexOf("name: t2\n"), -1);
  EXPECT_NE(editor.yaml().indexOf("world_size: 3\n"), -1);
  EXPECT_NE(editor.yaml().indexOf("name: adam"), -1);
  // Gone from the YAML, it is gone for the form too: the next form edit does not bring it back.
  editor.setYaml(editor.yaml().replace("frobnicate: 3\n", ""), "x.yaml");
  EXPECT_TRUE(editor.isValid()) << ::testing::PrintToString(editorDiagnostics(editor));
  typeInto(field<QLineEdit>(editor, "name"), "t3");
  EXPECT_EQ(editor.yaml().indexOf("frobnicate"), -1);
  EXPECT_TRUE(launchButton(editor)->isEnabled());
}

TEST_F(JobEditorTest, FormValidatesAsThePersonTypes) {
  JobEditor editor(kResources);
  ASSERT_TRUE(editor.newFromTemplate(kResources + "/jobs/examples/torch_ddp_demo.yaml"));
  QSignalSpy validity(&editor, &JobEditor::validityChanged);
  auto* command = field<QLineEdit>(editor, "command");
  typeInto(command, "");
  EXPECT_FALSE(editor.isValid());
  ASSERT_EQ(validity.count(), 1);
  EXPECT_FALSE(validity.takeFirst().at(0).toBool());
  EXPECT_NE(editor.fieldProblem("command").indexOf("expected at least one argument"), -1);
  EXPECT_TRUE(outlined(command));
  typeInto(command, "python x.py");
  EXPECT_TRUE(editor.isValid());
  ASSERT_EQ(validity.count(), 1);
  EXPECT_TRUE(validity.takeFirst().at(0).toBool());
  EXPECT_FALSE(outlined(command));
}

TEST_F(JobEditorTest, YamlEditsRefillTheFormAfterTheDebounce) {
  JobEditor editor(kResources);
  ASSERT_TRUE(editor.newFromTemplate(kResources + "/jobs/demo.yaml"));
  auto* text = editor.findChild<YamlTextEdit*>();
  ASSERT_NE(text, nullptr);
  text->setPlainText(editor.yaml().replace("world_size: 2", "world_size: 6"));
  EXPECT_FALSE(launchButton(editor)->isEnabled());  // not checked yet
  EXPECT_EQ(field<IntField>(editor, "world_size")->value(), 2);
  QTRY_COMPARE_WITH_TIMEOUT(field<IntField>(editor, "world_size")->value(), 6, 2000);
  EXPECT_TRUE(launchButton(editor)->isEnabled());

  // Unreadable YAML locks the form instead of letting it overwrite the text.
  text->setPlainText("name: [unclosed\n");
  editor.flushYamlEdits();
  EXPECT_FALSE(field<QLineEdit>(editor, "name")->isEnabled());
  ASSERT_EQ(editor.problems().size(), 1u);
  EXPECT_NE(editor.problems()[0].message.find("YAML syntax error"), std::string::npos);
}

TEST_F(JobEditorTest, ClickingAProblemGoesToItsLine) {
  JobEditor editor(kResources);
  const QString yaml = nativeSpec("  optimizer: {name: sgd, lr: -1}\n");
  editor.setYaml(yaml, "x.yaml");
  editor.show();
  auto* list = editor.findChild<QListWidget*>(QStringLiteral("problems"));
  auto* tabs = editor.findChild<QTabWidget*>();
  auto* text = editor.findChild<YamlTextEdit*>();
  tabs->setCurrentIndex(1);
  Q_EMIT list->itemClicked(list->item(0));
  EXPECT_EQ(text->textCursor().blockNumber() + 1, editor.problems()[0].line);
  EXPECT_EQ(text->textCursor().positionInBlock(), 2);  // at the text, after the indent
  // From the form tab, the field itself gets the focus.
  tabs->setCurrentIndex(0);
  QApplication::setActiveWindow(&editor);
  Q_EMIT list->itemClicked(list->item(0));
  EXPECT_EQ(tabs->currentIndex(), 0);
  EXPECT_EQ(QApplication::focusWidget(), editor.fieldWidget("native.optimizer.lr"));
}

// Issue 35: of three problems at once, the unknown agent joined the list only after the other two
// were fixed.
TEST_F(JobEditorTest, AnUnknownAgentIsListedWithTheSpecsOtherProblems) {
  JobEditor editor(kResources);
  editor.setAgents({onlineAgent("gpu-node-1")});
  editor.setYaml(
      "name: t\nlauncher: native\nplacement:\n  - {agent: gpu-node-9, ranks: 1}\nnative:\n"
      "  model: {kind: mlp, hidden: [8], activation: relu, task: classification}\n"
      "  dataset: {kind: synthetic, samples: 100, features: 4, classes: 2, seed: 1}\n"
      "  batch_size: 8\n  epochs: 1\n  optimizer: {name: sgd, lr: -1}\n  clip_norm: -3\n",
      "x.yaml");
  std::vector<std::string> fields;
  for (const job::SpecDiagnostic& d : editor.problems()) fields.push_back(d.field);
  ASSERT_EQ(fields.size(), 3u) << ::testing::PrintToString(fields);
  EXPECT_EQ(fields[0], "placement[0].agent");
  EXPECT_EQ(editor.problems()[0].line, 4);
  EXPECT_NE(editor.problems()[0].message.find("unknown agent 'gpu-node-9'"), std::string::npos);
}

// Ctrl+C in the problem list copies the selected problems, a line each (it copied nothing).
TEST_F(JobEditorTest, TheProblemsCanBeCopied) {
  JobEditor editor(kResources);
  editor.setYaml(nativeSpec("  optimizer: {name: sgd, lr: -1}\n  clip_norm: -3\n"), "x.yaml");
  auto* list = editor.findChild<QListWidget*>(QStringLiteral("problems"));
  ASSERT_NE(list, nullptr);
  ASSERT_GE(list->count(), 2);
  list->selectAll();
  const QStringList copied = selectedRowsAsTsv(*list).split('\n', Qt::SkipEmptyParts);
  ASSERT_EQ(copied.size(), list->count());
  for (int i = 0; i < list->count(); ++i) EXPECT_EQ(copied[i], list->item(i)->text().simplified());
}

TEST_F(JobEditorTest, LaunchSendsTheYamlOnlyWhenValid) {
  JobEditor editor(kResources);
  QSignalSpy launched(&editor, &JobEditor::launchRequested);
  const QString path = kResources + "/jobs/demo.yaml";
  ASSERT_TRUE(editor.openFile(path));
  launchButton(editor)->click();
  ASSERT_EQ(launched.count(), 1);
  EXPECT_EQ(launched.at(0).at(0).toString(), readText(path));
  EXPECT_EQ(launched.at(0).at(1).toString(), QFileInfo(path).absoluteFilePath());
}

TEST_F(JobEditorTest, SaveOpenAndRecentFiles) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  JobEditor editor(kResources);
  ASSERT_TRUE(editor.newFromTemplate(kResources + "/jobs/examples/torchrun_ddp.yaml"));
  EXPECT_EQ(editor.fileName(), "");
  typeInto(field<QLineEdit>(editor, "name"), "saved-job");
  EXPECT_TRUE(editor.isModified());
  const QString path = dir.filePath("saved.yaml");
  ASSERT_TRUE(editor.saveFile(path)) << editor.lastError().toStdString();
  EXPECT_FALSE(editor.isModified());
  EXPECT_EQ(editor.fileName(), path);
  EXPECT_EQ(readText(path), editor.yaml());
  EXPECT_EQ(parseOk(readText(path)).name, "saved-job");

  JobEditor other(kResources);
  ASSERT_TRUE(other.openFile(path));
  EXPECT_EQ(field<QLineEdit>(other, "name")->text(), "saved-job");
  EXPECT_FALSE(other.openFile(dir.filePath("missing.yaml")));
  EXPECT_NE(other.lastError().indexOf("missing.yaml"), -1);
  const QStringList recent = QSettings().value(JobEditor::kRecentFilesKey).toStringList();
  EXPECT_EQ(recent, QStringList{path});  // once, newest first
  EXPECT_FALSE(editor.saveFile(dir.filePath("no/such/dir/x.yaml")));
  EXPECT_FALSE(editor.lastError().isEmpty());
}

TEST_F(JobEditorTest, Screenshots) {
  const QString dir = QStringLiteral(RM_BIN_DIR "/../screenshots");
  ASSERT_TRUE(QDir().mkpath(dir));
  JobEditor editor(kResources);
  client::AgentStatus node = onlineAgent("local");
  editor.setAgents({node});
  ASSERT_TRUE(editor.openFile(kResources + "/jobs/demo.yaml"));
  editor.resize(1280, 900);
  editor.show();
  QApplication::processEvents();
  const QString form_png = dir + "/editor_form.png";
  ASSERT_TRUE(editor.grab().save(form_png));

  // A problem typed in the form, shown on its field, in the list and on its YAML line.
  typeInto(field<QLineEdit>(editor, "native.optimizer.lr"), "-0.1");
  QApplication::processEvents();
  ASSERT_TRUE(editor.grab().save(dir + "/editor_form_problem.png"));
  editor.findChild<QTabWidget*>()->setCurrentIndex(1);
  editor.findChild<YamlTextEdit*>()->goToLine(editor.problems().at(0).line);
  QApplication::processEvents();
  ASSERT_TRUE(editor.grab().save(dir + "/editor_problems.png"));
  EXPECT_TRUE(QFileInfo::exists(form_png));
  // The demo's launch, previewed rank by rank.
  typeInto(field<QLineEdit>(editor, "native.optimizer.lr"), "0.05");
  editor.findChild<QTabWidget*>()->setCurrentIndex(2);
  QApplication::processEvents();
  EXPECT_EQ(editor.findChild<QTreeWidget*>(QStringLiteral("launchPreview"))->topLevelItemCount(),
            2);
  ASSERT_TRUE(editor.grab().save(dir + "/editor_launch_preview.png"));

  // The torchrun example: command, env, placement by agent and metric patterns.
  client::AgentStatus node2 = node;
  node2.name = "node2";
  node2.state = client::AgentState::kUnreachable;
  node2.reason = "no answer in 3 s";
  node.name = "node1";
  node.inventory->add_gpus()->set_index(0);
  node.inventory->add_gpus()->set_index(1);
  editor.setAgents({node, node2});
  ASSERT_TRUE(editor.openFile(kResources + "/jobs/examples/torchrun_ddp.yaml"));
  editor.findChild<QTabWidget*>()->setCurrentIndex(0);
  QApplication::processEvents();
  ASSERT_TRUE(editor.grab().save(dir + "/editor_form_torchrun.png"));
}

}  // namespace
}  // namespace ringmaster::gui

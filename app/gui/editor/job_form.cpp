#include "editor/job_form.h"

#include <QButtonGroup>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRadioButton>
#include <QTableWidget>
#include <QVBoxLayout>
#include <climits>

#include "editor/error_outline.h"
#include "editor/form_fields.h"
#include "editor/key_value_table.h"
#include "editor/placement_table.h"
#include "editor/shell_words.h"
#include "ringmaster/job/spec.h"

namespace ringmaster::gui {
namespace {

constexpr int kNumberWidth = 150;
const char* const kHelpProperty = "ringmasterHelp";

QString qs(const std::string& text) { return QString::fromStdString(text); }
std::string ss(const QString& text) { return text.toStdString(); }

void setTextIfChanged(QLineEdit* edit, const std::string& text) {
  if (edit->text() != qs(text)) edit->setText(qs(text));
}

void setIfChanged(IntField* field, const std::string& text) {
  if (field->yamlText() != qs(text)) field->setYamlText(qs(text));
}

void setIfChanged(ChoiceField* field, const std::string& text) {
  if (field->yamlText() != qs(text)) field->setYamlText(qs(text));
}

QFormLayout* newFormLayout(QWidget* parent) {
  auto* form = new QFormLayout(parent);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form->setLabelAlignment(Qt::AlignRight | Qt::AlignVCenter);
  form->setRowWrapPolicy(QFormLayout::DontWrapRows);
  return form;
}

// Aliases: diagnostics about a key that has no field of its own point at the field that edits it.
std::string aliasOf(const std::string& field) {
  if (field == "native.epochs" || field == "native.steps") return "native.length";
  if (field == "restart") return "restart.max_restarts";
  if (field == "metrics") return "metrics.patterns";
  if (field == "native.checkpoint") return "native.checkpoint.every_steps";
  return field;
}

std::string parentField(const std::string& field) {
  if (!field.empty() && field.back() == ']') {
    const size_t open = field.rfind('[');
    return open == std::string::npos ? std::string() : field.substr(0, open);
  }
  const size_t dot = field.rfind('.');
  return dot == std::string::npos ? std::string() : field.substr(0, dot);
}

}  // namespace

JobForm::JobForm(QWidget* parent) : QWidget(parent) {
  auto* grid = new QGridLayout(this);
  grid->setContentsMargins(12, 12, 12, 12);
  grid->setHorizontalSpacing(12);
  grid->setVerticalSpacing(12);
  grid->addWidget(buildJobGroup(), 0, 0);
  grid->addWidget(buildPlacementGroup(), 0, 1);
  grid->addWidget(buildCommandGroup(), 1, 0, 1, 2);
  grid->addWidget(buildNativeGroup(), 2, 0, 1, 2);
  grid->addWidget(buildEnvGroup(), 3, 0);
  grid->addWidget(buildMetricsGroup(), 3, 1);
  grid->setColumnStretch(0, 1);
  grid->setColumnStretch(1, 1);
  grid->setRowStretch(4, 1);

  connect(command_, &QLineEdit::textEdited, this, &JobForm::updateCommandPreview);
  connect(by_agent_, &QRadioButton::toggled, this, &JobForm::onFieldEdited);
  connect(placement_, &PlacementTable::edited, this, &JobForm::onFieldEdited);
  connect(env_, &KeyValueTable::edited, this, &JobForm::onFieldEdited);
  connect(metrics_, &KeyValueTable::edited, this, &JobForm::onFieldEdited);

  setDraft(JobDraft{});
}

void JobForm::onFieldEdited() {
  if (filling_) return;
  updateVisibility();  // the launcher, dataset kind and optimizer decide which fields show
  Q_EMIT edited();
}

QLineEdit* JobForm::lineEdit(const char* field, const QString& placeholder, const QString& help) {
  auto* edit = new QLineEdit(this);
  edit->setObjectName(QString::fromLatin1(field));
  edit->setPlaceholderText(placeholder);
  edit->setToolTip(help);
  edit->setProperty(kHelpProperty, help);
  connect(edit, &QLineEdit::textEdited, this, &JobForm::onFieldEdited);
  return edit;
}

IntField* JobForm::intField(const char* field, int minimum, const QString& help) {
  auto* spin = new IntField(minimum, INT_MAX, this);
  spin->setObjectName(QString::fromLatin1(field));
  spin->setToolTip(help);
  spin->setProperty(kHelpProperty, help);
  spin->setMaximumWidth(kNumberWidth);
  spin->setGroupSeparatorShown(true);  // 40,000 samples read at a glance
  connect(spin, &IntField::edited, this, &JobForm::onFieldEdited);
  return spin;
}

ChoiceField* JobForm::choiceField(const char* field, const QStringList& choices,
                                  const QString& help) {
  auto* combo = new ChoiceField(choices, this);
  combo->setObjectName(QString::fromLatin1(field));
  combo->setToolTip(help);
  combo->setProperty(kHelpProperty, help);
  combo->setMinimumWidth(kNumberWidth);
  combo->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
  connect(combo, &ChoiceField::edited, this, &JobForm::onFieldEdited);
  return combo;
}

QGroupBox* JobForm::buildJobGroup() {
  auto* group = new QGroupBox(tr("Job"), this);
  auto* form = newFormLayout(group);
  name_ = lineEdit("name", tr("e.g. resnet-ddp"), tr("1-64 characters from A-Z a-z 0-9 . _ -"));
  description_ = lineEdit("description", tr("optional"),
                          tr("What the job is and what to look at: shown on its dashboard"));
  launcher_ = choiceField(
      "launcher", {"native", "torchrun", "command", "tensorflow", "deepspeed"},
      tr("native: Ringmaster's built-in trainer; torchrun: a PyTorch script with torchrun's "
         "environment; command: any program; tensorflow: a TF_CONFIG per rank (roles from the "
         "spec's tensorflow: section); deepspeed: DeepSpeed's launcher environment and "
         "--local_rank"));
  backend_ = choiceField("backend", {"auto", "nccl", "gloo"},
                         tr("Collective backend; auto picks NCCL when every rank has a GPU"));
  workdir_ = lineEdit("workdir", tr("the agent's default"),
                      tr("Working directory of the ranks on their agents (an absolute path)"));
  max_restarts_ = intField("restart.max_restarts", 0,
                           tr("How many times a failed job is restarted before it is given up"));
  stop_grace_ = intField("stop_grace_seconds", 0,
                         tr("Seconds between SIGTERM and SIGKILL when the job is stopped"));
  stop_grace_->setSuffix(tr(" s"));
  form->addRow(tr("Name"), name_);
  form->addRow(tr("Description"), description_);
  form->addRow(tr("Launcher"), launcher_);
  form->addRow(tr("Backend"), backend_);
  form->addRow(tr("Working directory"), workdir_);
  form->addRow(tr("Max restarts"), max_restarts_);
  form->addRow(tr("Stop grace"), stop_grace_);
  return group;
}

QGroupBox* JobForm::buildCommandGroup() {
  command_group_ = new QGroupBox(tr("Command"), this);
  auto* form = newFormLayout(command_group_);
  command_ = lineEdit("command", tr("e.g. python train.py --epochs 10"),
                      tr("The program and its arguments, quoted as in a shell; each rank runs it"));
  command_preview_ = new QLabel(command_group_);
  command_preview_->setTextFormat(Qt::RichText);
  command_preview_->setWordWrap(true);
  command_preview_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  python_ =
      lineEdit("python", tr("torchrun, tensorflow, deepspeed: python3 on the job's PATH"),
               tr("The interpreter that runs a .py script (an absolute path, or a name on the "
                  "rank's PATH): set it to the environment that has your packages"));
  form->addRow(tr("Command line"), command_);
  form->addRow(tr("Arguments"), command_preview_);
  form->addRow(tr("Python"), python_);
  return command_group_;
}

QGroupBox* JobForm::buildPlacementGroup() {
  auto* group = new QGroupBox(tr("Placement"), this);
  auto* layout = new QVBoxLayout(group);
  by_world_size_ = new QRadioButton(tr("Any free slots: world size"), group);
  by_agent_ = new QRadioButton(tr("Pin ranks to agents"), group);
  by_world_size_->setObjectName(QStringLiteral("placement.by_world_size"));
  by_agent_->setObjectName(QStringLiteral("placement.by_agent"));
  by_world_size_->setToolTip(
      tr("world_size ranks, filling the agents' free slots in the cluster "
         "file's order"));
  by_agent_->setToolTip(
      tr("placement: so many ranks on each agent you name, numbered in that "
         "order"));
  auto* modes = new QButtonGroup(group);
  modes->addButton(by_world_size_);
  modes->addButton(by_agent_);
  world_size_ = intField("world_size", 1, tr("Total ranks; Ringmaster fills free slots"));
  world_size_->setSuffix(tr(" ranks"));
  cluster_summary_ = new QLabel(group);
  cluster_summary_->setWordWrap(true);
  auto* world_row = new QHBoxLayout;
  world_row->addWidget(by_world_size_);
  world_row->addWidget(world_size_);
  world_row->addStretch();
  placement_ = new PlacementTable(group);
  placement_->table()->setObjectName(QStringLiteral("placement"));
  placement_->table()->setToolTip(tr("Each agent and its ranks; Available says what it has now"));
  layout->addLayout(world_row);
  layout->addWidget(cluster_summary_);
  layout->addWidget(by_agent_);
  layout->addWidget(placement_);
  layout->addStretch();
  updateClusterSummary();
  return group;
}

QGroupBox* JobForm::buildNativeGroup() {
  native_group_ = new QGroupBox(tr("Native trainer"), this);
  native_group_->setObjectName(QStringLiteral("native"));
  auto* grid = new QGridLayout(native_group_);
  grid->setHorizontalSpacing(12);

  auto* model = new QGroupBox(tr("Model"), native_group_);
  model->setObjectName(QStringLiteral("native.model"));
  auto* model_form = newFormLayout(model);
  model_kind_ = choiceField("native.model.kind", {"mlp"}, tr("A multi-layer perceptron"));
  hidden_ = lineEdit("native.model.hidden", tr("none: a linear model"),
                     tr("Widths of the hidden layers, e.g. 256, 128"));
  activation_ = choiceField("native.model.activation", {"relu", "gelu", "tanh"},
                            tr("The hidden layers' activation function"));
  task_ = choiceField("native.model.task", {"classification", "regression"},
                      tr("classification: predict a class (accuracy is reported); regression: "
                         "predict a number (mse is reported)"));
  model_form->addRow(tr("Kind"), model_kind_);
  model_form->addRow(tr("Hidden layers"), hidden_);
  model_form->addRow(tr("Activation"), activation_);
  model_form->addRow(tr("Task"), task_);

  auto* dataset = new QGroupBox(tr("Dataset"), native_group_);
  dataset->setObjectName(QStringLiteral("native.dataset"));
  dataset_layout_ = newFormLayout(dataset);
  dataset_kind_ =
      choiceField("native.dataset.kind", {"synthetic", "csv", "digits", "idx", "fashion_mnist"},
                  tr("synthetic: generated from a seed on every rank; csv: a file with a label "
                     "column, read by every rank; digits: the 8x8 handwritten digits built into "
                     "the worker (1797 samples, 10 classes); idx: image and label files in the "
                     "MNIST format (gzipped or not) on every agent; fashion_mnist: Debian's "
                     "dataset-fashion-mnist (60,000 28x28 images, 10 classes, evaluated on its "
                     "10,000 test images)"));
  samples_ = intField("native.dataset.samples", 1, tr("Samples generated"));
  features_ = intField("native.dataset.features", 1, tr("Features per sample"));
  classes_ = intField("native.dataset.classes", 2, tr("Classes (classification)"));
  dataset_seed_ = intField("native.dataset.seed", 0,
                           tr("Seed of the generated data and of the held-out split"));
  csv_path_ = lineEdit("native.dataset.path", tr("/data/train.csv"),
                       tr("Path of the CSV file on every agent"));
  label_column_ = lineEdit("native.dataset.label_column", tr("label"), tr("Column of the label"));
  images_ = lineEdit("native.dataset.images", tr("/data/train-images-idx3-ubyte.gz"),
                     tr("IDX file of the training images on every agent"));
  labels_ = lineEdit("native.dataset.labels", tr("/data/train-labels-idx1-ubyte.gz"),
                     tr("IDX file of the training labels on every agent"));
  test_images_ = lineEdit("native.dataset.test_images", tr("none: hold some out"),
                          tr("IDX file of the test images; with it the job is evaluated on them"));
  test_labels_ = lineEdit("native.dataset.test_labels", tr("none: hold some out"),
                          tr("IDX file of the test labels"));
  standardize_ = choiceField("native.dataset.standardize", {"true", "false"},
                             tr("Standardize features with the training split's statistics"));
  eval_fraction_ = lineEdit("native.dataset.eval_fraction", tr("0.1 (default)"),
                            tr("Fraction held out for evaluation, in [0, 1)"));
  dataset_layout_->addRow(tr("Kind"), dataset_kind_);
  dataset_layout_->addRow(tr("Samples"), samples_);
  dataset_layout_->addRow(tr("Features"), features_);
  dataset_layout_->addRow(tr("Classes"), classes_);
  dataset_layout_->addRow(tr("Data seed"), dataset_seed_);
  dataset_layout_->addRow(tr("CSV path"), csv_path_);
  dataset_layout_->addRow(tr("Label column"), label_column_);
  dataset_layout_->addRow(tr("Images"), images_);
  dataset_layout_->addRow(tr("Labels"), labels_);
  dataset_layout_->addRow(tr("Test images"), test_images_);
  dataset_layout_->addRow(tr("Test labels"), test_labels_);
  dataset_layout_->addRow(tr("Standardize"), standardize_);
  dataset_layout_->addRow(tr("Eval fraction"), eval_fraction_);

  auto* checkpoints = new QGroupBox(tr("Checkpoints and evaluation"), native_group_);
  auto* checkpoint_form = newFormLayout(checkpoints);
  checkpoint_every_ = intField("native.checkpoint.every_steps", 0,
                               tr("Optimizer steps between checkpoints; 0 = none"));
  checkpoint_dir_ = lineEdit("native.checkpoint.dir", tr("chosen by the worker"),
                             tr("Where checkpoints are written on each agent"));
  checkpoint_keep_ = intField("native.checkpoint.keep", 0, tr("Newest checkpoints kept; 0 = all"));
  eval_every_ = intField("native.eval_every", 0, tr("Epochs between evaluations; 0 = at the end"));
  checkpoint_form->addRow(tr("Every"), checkpoint_every_);
  checkpoint_every_->setSuffix(tr(" steps"));
  checkpoint_form->addRow(tr("Directory"), checkpoint_dir_);
  checkpoint_form->addRow(tr("Keep"), checkpoint_keep_);
  checkpoint_form->addRow(tr("Evaluate every"), eval_every_);
  eval_every_->setSuffix(tr(" epochs"));

  auto* optimizer = new QGroupBox(tr("Optimizer"), native_group_);
  optimizer->setObjectName(QStringLiteral("native.optimizer"));
  optimizer_layout_ = newFormLayout(optimizer);
  optimizer_ = choiceField("native.optimizer.name", {"sgd", "adam"},
                           tr("sgd (with the momentum below) or adam"));
  lr_ = lineEdit("native.optimizer.lr", tr("0.05 (default)"), tr("Peak learning rate, > 0"));
  momentum_ = lineEdit("native.optimizer.momentum", tr("0.9 (default)"), tr("In [0, 1)"));
  nesterov_ = choiceField("native.optimizer.nesterov", {"false", "true"}, tr("Needs momentum > 0"));
  beta1_ = lineEdit("native.optimizer.beta1", tr("0.9 (default)"), tr("In [0, 1)"));
  beta2_ = lineEdit("native.optimizer.beta2", tr("0.999 (default)"), tr("In [0, 1)"));
  eps_ = lineEdit("native.optimizer.eps", tr("1e-08 (default)"), tr("> 0"));
  weight_decay_ = lineEdit("native.optimizer.weight_decay", tr("0 (default)"),
                           tr("sgd: L2 penalty; adam: decoupled (AdamW)"));
  warmup_steps_ = intField("native.optimizer.warmup_steps", 0, tr("Linear warmup steps"));
  schedule_ = choiceField("native.optimizer.schedule", {"cosine", "constant"},
                          tr("How the learning rate changes after the warmup: down to 0 along a "
                             "cosine, or constant"));
  for (QLineEdit* edit : {lr_, momentum_, beta1_, beta2_, eps_, weight_decay_, eval_fraction_}) {
    edit->setMaximumWidth(kNumberWidth);
  }
  optimizer_layout_->addRow(tr("Name"), optimizer_);
  optimizer_layout_->addRow(tr("Learning rate"), lr_);
  optimizer_layout_->addRow(tr("Momentum"), momentum_);
  optimizer_layout_->addRow(tr("Nesterov"), nesterov_);
  optimizer_layout_->addRow(tr("Beta 1"), beta1_);
  optimizer_layout_->addRow(tr("Beta 2"), beta2_);
  optimizer_layout_->addRow(tr("Epsilon"), eps_);
  optimizer_layout_->addRow(tr("Weight decay"), weight_decay_);
  optimizer_layout_->addRow(tr("Warmup"), warmup_steps_);
  warmup_steps_->setSuffix(tr(" steps"));
  optimizer_layout_->addRow(tr("Schedule"), schedule_);

  auto* training = new QGroupBox(tr("Training"), native_group_);
  auto* training_form = newFormLayout(training);
  batch_size_ = intField("native.batch_size", 1, tr("Samples per rank per micro-batch"));
  length_unit_ = choiceField("native.length_unit", {"epochs", "steps"},
                             tr("Train for a number of epochs or of optimizer steps"));
  length_unit_->setMinimumWidth(0);
  length_ = intField("native.length", 1, tr("How long to train"));
  auto* length_row = new QHBoxLayout;
  length_row->addWidget(length_);
  length_row->addWidget(length_unit_);
  length_row->addStretch();
  grad_accumulation_ =
      intField("native.grad_accumulation", 1, tr("Micro-batches per optimizer step"));
  clip_norm_ = lineEdit("native.clip_norm", tr("0 (off)"), tr("Global L2 gradient norm; 0 = off"));
  clip_norm_->setMaximumWidth(kNumberWidth);
  seed_ = intField("native.seed", 0, tr("Seed of model initialisation and shuffling"));
  training_form->addRow(tr("Batch size"), batch_size_);
  training_form->addRow(tr("Train for"), length_row);
  training_form->addRow(tr("Grad accumulation"), grad_accumulation_);
  training_form->addRow(tr("Clip norm"), clip_norm_);
  training_form->addRow(tr("Seed"), seed_);

  auto* strategy = new QGroupBox(tr("Strategy"), native_group_);
  strategy->setObjectName(QStringLiteral("native.strategy"));
  strategy_layout_ = newFormLayout(strategy);
  average_every_ = intField("native.strategy.local_sgd.average_every", 0,
                            tr("Local SGD: optimizer steps each rank takes on its own between "
                               "model averagings; 0 = off (gradients averaged every step)"));
  data_split_ = choiceField("native.strategy.data_split", {"iid", "by_label"},
                            tr("iid: every rank draws from all the data; by_label: rank r holds "
                               "the labels l with l % ranks == r (federated averaging's skew)"));
  compression_ = choiceField("native.strategy.compression", {"none", "fp16", "topk", "powersgd"},
                             tr("Of the gradient allreduce (not with local SGD): fp16 sends half "
                                "the bytes, topk the largest entries, powersgd each weight "
                                "matrix as a low-rank product; all with error feedback"));
  topk_ratio_ = lineEdit("native.strategy.compression.topk.ratio", tr("0.01"),
                         tr("Fraction of the gradient's entries each rank sends, in (0, 1]"));
  topk_ratio_->setMaximumWidth(kNumberWidth);
  strategy_layout_->addRow(tr("Average every"), average_every_);
  average_every_->setSuffix(tr(" steps"));
  strategy_layout_->addRow(tr("Data split"), data_split_);
  strategy_layout_->addRow(tr("Compression"), compression_);
  strategy_layout_->addRow(tr("Top-k ratio"), topk_ratio_);
  powersgd_rank_ = intField("native.strategy.compression.powersgd.rank", 1,
                            tr("PowerSGD: rank of each weight gradient's approximation P Q^T; "
                               "higher sends more and holds back less"));
  strategy_layout_->addRow(tr("PowerSGD rank"), powersgd_rank_);
  pipeline_stages_ = intField("native.strategy.pipeline.stages", 0,
                              tr("Pipeline parallelism: ranks the model's layers are split over "
                                 "(GPipe); the job's ranks must be a multiple (stages x "
                                 "data-parallel replicas); 0 = off"));
  micro_batches_ = intField("native.strategy.pipeline.micro_batches", 1,
                            tr("Pipeline: micro-batches each batch is split into; more of them "
                               "shrink the idle bubble, (stages-1)/(micro-batches+stages-1)"));
  strategy_layout_->addRow(tr("Pipeline stages"), pipeline_stages_);
  strategy_layout_->addRow(tr("Micro-batches"), micro_batches_);
  ps_servers_ = intField("native.strategy.parameter_server.servers", 0,
                         tr("Parameter servers: the job's last ranks hold shards of the "
                            "parameters and apply the optimizer, the others push gradients and "
                            "pull parameters; fewer than the job's ranks; 0 = off"));
  ps_mode_ = choiceField("native.strategy.parameter_server.mode", {"sync", "async"},
                         tr("sync: servers wait for every worker each step; async: each push is "
                            "applied as it arrives"));
  ps_max_staleness_ = intField("native.strategy.parameter_server.max_staleness", 0,
                               tr("Async: a push computed on parameters more than this many "
                                  "updates old is refused (the worker pulls fresh ones)"));
  strategy_layout_->addRow(tr("Parameter servers"), ps_servers_);
  strategy_layout_->addRow(tr("Server mode"), ps_mode_);
  ps_max_lead_ = intField("native.strategy.parameter_server.max_lead", 0,
                          tr("Async: a worker this many pushes ahead of the others waits for "
                             "them (so that no worker takes most of the pushes, and its share "
                             "of the data most of the training); 0 = no bound"));
  strategy_layout_->addRow(tr("Max staleness"), ps_max_staleness_);
  strategy_layout_->addRow(tr("Max lead"), ps_max_lead_);

  grid->addWidget(model, 0, 0);
  grid->addWidget(dataset, 1, 0);
  grid->addWidget(checkpoints, 2, 0);
  grid->addWidget(training, 0, 1);
  grid->addWidget(optimizer, 1, 1, 2, 1);
  grid->addWidget(strategy, 3, 0);
  grid->setColumnStretch(0, 1);
  grid->setColumnStretch(1, 1);
  return native_group_;
}

QGroupBox* JobForm::buildEnvGroup() {
  auto* group = new QGroupBox(tr("Environment"), this);
  auto* layout = new QVBoxLayout(group);
  env_ = new KeyValueTable(tr("Variable"), tr("Value"), tr("Add variable"), group);
  env_->table()->setObjectName(QStringLiteral("env"));
  env_->table()->setToolTip(
      tr("Environment variables of every rank, on top of the launcher's "
         "(RANK, WORLD_SIZE, MASTER_ADDR...)"));
  layout->addWidget(env_);
  return group;
}

QGroupBox* JobForm::buildMetricsGroup() {
  auto* group = new QGroupBox(tr("Metrics read from the output"), this);
  auto* layout = new QVBoxLayout(group);
  metrics_ =
      new KeyValueTable(tr("Metric"), tr("Regex (group 1 = the number)"), tr("Add pattern"), group);
  metrics_->table()->setObjectName(QStringLiteral("metrics.patterns"));
  metrics_->table()->setToolTip(
      tr("Metrics read from lines the script prints: a name and an RE2 "
         "pattern whose first group is the number (JSON lines need "
         "none)"));
  layout->addWidget(metrics_);
  return group;
}

void JobForm::setDraft(const JobDraft& d) {
  filling_ = true;
  loaded_ = d;
  setTextIfChanged(name_, d.name);
  setTextIfChanged(description_, d.description);
  setIfChanged(launcher_, d.launcher);
  setIfChanged(backend_, d.backend);
  setTextIfChanged(workdir_, d.workdir);
  setTextIfChanged(python_, d.python);
  setIfChanged(max_restarts_, d.max_restarts);
  setIfChanged(stop_grace_, d.stop_grace_seconds);
  if (splitShellWords(ss(command_->text())).words != d.command) {
    command_->setText(qs(joinShellWords(d.command)));
  }
  (d.use_placement ? by_agent_ : by_world_size_)->setChecked(true);
  setIfChanged(world_size_, d.world_size);
  placement_->setEntries(d.placement);

  const NativeDraft& n = d.native;
  setIfChanged(model_kind_, n.model_kind);
  setTextIfChanged(hidden_, n.hidden);
  setIfChanged(activation_, n.activation);
  setIfChanged(task_, n.task);
  setIfChanged(dataset_kind_, n.dataset_kind);
  setIfChanged(samples_, n.samples);
  setIfChanged(features_, n.features);
  setIfChanged(classes_, n.classes);
  setIfChanged(dataset_seed_, n.dataset_seed);
  setTextIfChanged(csv_path_, n.csv_path);
  setTextIfChanged(label_column_, n.label_column);
  setTextIfChanged(images_, n.images);
  setTextIfChanged(labels_, n.labels);
  setTextIfChanged(test_images_, n.test_images);
  setTextIfChanged(test_labels_, n.test_labels);
  setIfChanged(standardize_, n.standardize);
  setTextIfChanged(eval_fraction_, n.eval_fraction);
  setIfChanged(batch_size_, n.batch_size);
  setIfChanged(length_unit_, n.length_unit);
  setIfChanged(length_, n.length);
  setIfChanged(optimizer_, n.optimizer);
  setTextIfChanged(lr_, n.lr);
  setTextIfChanged(momentum_, n.momentum);
  setIfChanged(nesterov_, n.nesterov);
  setTextIfChanged(beta1_, n.beta1);
  setTextIfChanged(beta2_, n.beta2);
  setTextIfChanged(eps_, n.eps);
  setTextIfChanged(weight_decay_, n.weight_decay);
  setIfChanged(warmup_steps_, n.warmup_steps);
  setIfChanged(schedule_, n.schedule);
  setIfChanged(grad_accumulation_, n.grad_accumulation);
  setTextIfChanged(clip_norm_, n.clip_norm);
  setIfChanged(checkpoint_every_, n.checkpoint_every_steps);
  setTextIfChanged(checkpoint_dir_, n.checkpoint_dir);
  setIfChanged(checkpoint_keep_, n.checkpoint_keep);
  setIfChanged(eval_every_, n.eval_every);
  setIfChanged(seed_, n.seed);
  setIfChanged(average_every_, n.average_every);
  setIfChanged(data_split_, n.data_split);
  setIfChanged(compression_, n.compression);
  setTextIfChanged(topk_ratio_, n.topk_ratio);
  setIfChanged(powersgd_rank_, n.powersgd_rank);
  setIfChanged(pipeline_stages_, n.pipeline_stages);
  setIfChanged(micro_batches_, n.micro_batches);
  setIfChanged(ps_servers_, n.ps_servers);
  setIfChanged(ps_mode_, n.ps_mode);
  setIfChanged(ps_max_staleness_, n.ps_max_staleness);
  setIfChanged(ps_max_lead_, n.ps_max_lead);

  KeyValueTable::Pairs env;
  for (const auto& [k, v] : d.env) env.emplace_back(qs(k), qs(v));
  env_->setPairs(env);
  KeyValueTable::Pairs patterns;
  for (const auto& [k, v] : d.metric_patterns) patterns.emplace_back(qs(k), qs(v));
  metrics_->setPairs(patterns);

  updateCommandPreview();
  updateVisibility();
  updateClusterSummary();
  filling_ = false;
}

JobDraft JobForm::draft() const {
  JobDraft d;
  d.header_comment = loaded_.header_comment;
  d.has_native = loaded_.has_native;
  d.slurm_yaml = loaded_.slurm_yaml;
  d.tensorflow_yaml = loaded_.tensorflow_yaml;
  d.kept = loaded_.kept;
  d.name = ss(name_->text());
  d.description = ss(description_->text());
  d.launcher = ss(launcher_->yamlText());
  d.backend = ss(backend_->yamlText());
  d.workdir = ss(workdir_->text());
  d.python = ss(python_->text());
  d.max_restarts = ss(max_restarts_->yamlText());
  d.stop_grace_seconds = ss(stop_grace_->yamlText());
  d.command = splitShellWords(ss(command_->text())).words;
  d.use_placement = by_agent_->isChecked();
  d.world_size = ss(world_size_->yamlText());
  d.placement = placement_->entries();
  for (const auto& [k, v] : env_->pairs()) d.env.emplace_back(ss(k), ss(v));
  for (const auto& [k, v] : metrics_->pairs()) d.metric_patterns.emplace_back(ss(k), ss(v));

  NativeDraft& n = d.native;
  n.model_kind = ss(model_kind_->yamlText());
  n.hidden = ss(hidden_->text());
  n.activation = ss(activation_->yamlText());
  n.task = ss(task_->yamlText());
  n.dataset_kind = ss(dataset_kind_->yamlText());
  n.samples = ss(samples_->yamlText());
  n.features = ss(features_->yamlText());
  n.classes = ss(classes_->yamlText());
  n.dataset_seed = ss(dataset_seed_->yamlText());
  n.csv_path = ss(csv_path_->text());
  n.label_column = ss(label_column_->text());
  n.images = ss(images_->text());
  n.labels = ss(labels_->text());
  n.test_images = ss(test_images_->text());
  n.test_labels = ss(test_labels_->text());
  n.standardize = ss(standardize_->yamlText());
  n.eval_fraction = ss(eval_fraction_->text().trimmed());
  n.batch_size = ss(batch_size_->yamlText());
  n.length_unit = ss(length_unit_->yamlText());
  n.length = ss(length_->yamlText());
  n.optimizer = ss(optimizer_->yamlText());
  n.lr = ss(lr_->text().trimmed());
  n.momentum = ss(momentum_->text().trimmed());
  n.nesterov = ss(nesterov_->yamlText());
  n.beta1 = ss(beta1_->text().trimmed());
  n.beta2 = ss(beta2_->text().trimmed());
  n.eps = ss(eps_->text().trimmed());
  n.weight_decay = ss(weight_decay_->text().trimmed());
  n.warmup_steps = ss(warmup_steps_->yamlText());
  n.schedule = ss(schedule_->yamlText());
  n.grad_accumulation = ss(grad_accumulation_->yamlText());
  n.clip_norm = ss(clip_norm_->text().trimmed());
  n.checkpoint_every_steps = ss(checkpoint_every_->yamlText());
  n.checkpoint_dir = ss(checkpoint_dir_->text());
  n.checkpoint_keep = ss(checkpoint_keep_->yamlText());
  n.eval_every = ss(eval_every_->yamlText());
  n.seed = ss(seed_->yamlText());
  n.average_every = ss(average_every_->yamlText());
  n.data_split = ss(data_split_->yamlText());
  n.compression = ss(compression_->yamlText());
  n.topk_ratio = ss(topk_ratio_->text().trimmed());
  n.powersgd_rank = ss(powersgd_rank_->yamlText());
  n.pipeline_stages = ss(pipeline_stages_->yamlText());
  n.micro_batches = ss(micro_batches_->yamlText());
  n.ps_servers = ss(ps_servers_->yamlText());
  n.ps_mode = ss(ps_mode_->yamlText());
  n.ps_max_staleness = ss(ps_max_staleness_->yamlText());
  n.ps_max_lead = ss(ps_max_lead_->yamlText());
  return d;
}

void JobForm::setAgents(const std::vector<client::AgentStatus>& agents) {
  agents_ = agents;
  placement_->setAgents(agents);
  updateClusterSummary();
}

void JobForm::updateClusterSummary() {
  if (!loaded_.slurm_yaml.empty()) {
    cluster_summary_->setText(
        tr("Runs on Slurm: the slurm: section sets the nodes and ranks (edit it in the YAML)."));
    return;
  }
  if (agents_.empty()) {
    cluster_summary_->setText(tr("No cluster loaded: free slots are checked at launch."));
    return;
  }
  int online = 0;
  int free_slots = 0;
  int gpus = 0;
  for (const auto& agent : agents_) {
    if (agent.state != client::AgentState::kOnline) continue;
    ++online;
    if (agent.inventory) {
      free_slots += static_cast<int>(agent.inventory->slots_free());
      gpus += agent.inventory->gpus_size();
    }
  }
  cluster_summary_->setText(tr("Cluster now: %1 of %2 agents online, %3 free slots, %4 GPUs")
                                .arg(online)
                                .arg(agents_.size())
                                .arg(free_slots)
                                .arg(gpus));
}

void JobForm::updateVisibility() {
  const QString launcher = launcher_->yamlText();
  const bool native = launcher == QLatin1String("native");
  command_group_->setVisible(!native);
  native_group_->setVisible(native ||
                            (!job::parseLauncher(launcher.toStdString()) && loaded_.has_native));
  const QString kind = dataset_kind_->yamlText();
  const bool csv = kind == QLatin1String("csv");
  const bool synthetic = kind == QLatin1String("synthetic");
  const bool idx = kind == QLatin1String("idx");
  const bool fashion = kind == QLatin1String("fashion_mnist");
  for (QWidget* w : std::initializer_list<QWidget*>{samples_, features_, classes_}) {
    dataset_layout_->setRowVisible(w, synthetic);
  }
  dataset_layout_->setRowVisible(dataset_seed_, !csv && !fashion);
  for (QWidget* w : std::initializer_list<QWidget*>{csv_path_, label_column_}) {
    dataset_layout_->setRowVisible(w, csv);
  }
  for (QWidget* w : std::initializer_list<QWidget*>{images_, labels_, test_images_, test_labels_}) {
    dataset_layout_->setRowVisible(w, idx);
  }
  dataset_layout_->setRowVisible(standardize_, !synthetic);
  // Evaluated on a test set, nothing is held out.
  dataset_layout_->setRowVisible(eval_fraction_,
                                 !fashion && !(idx && !test_images_->text().trimmed().isEmpty()));
  strategy_layout_->setRowVisible(topk_ratio_, compression_->yamlText() == QLatin1String("topk"));
  strategy_layout_->setRowVisible(powersgd_rank_,
                                  compression_->yamlText() == QLatin1String("powersgd"));
  const QString stages = pipeline_stages_->yamlText();
  strategy_layout_->setRowVisible(micro_batches_,
                                  !stages.isEmpty() && stages != QLatin1String("0"));
  const QString servers = ps_servers_->yamlText();
  const bool ps = !servers.isEmpty() && servers != QLatin1String("0");
  strategy_layout_->setRowVisible(ps_mode_, ps);
  const bool async = ps && ps_mode_->yamlText() == QLatin1String("async");
  strategy_layout_->setRowVisible(ps_max_staleness_, async);
  strategy_layout_->setRowVisible(ps_max_lead_, async);
  const bool adam = optimizer_->yamlText() == QLatin1String("adam");
  for (QWidget* w : std::initializer_list<QWidget*>{momentum_, nesterov_}) {
    optimizer_layout_->setRowVisible(w, !adam);
  }
  for (QWidget* w : std::initializer_list<QWidget*>{beta1_, beta2_, eps_}) {
    optimizer_layout_->setRowVisible(w, adam);
  }
  const bool on_slurm = !loaded_.slurm_yaml.empty();
  for (QWidget* w : std::initializer_list<QWidget*>{by_world_size_, by_agent_}) {
    w->setEnabled(!on_slurm);
  }
  world_size_->setEnabled(by_world_size_->isChecked() && !on_slurm);
  placement_->setVisible(by_agent_->isChecked() && !on_slurm);
}

void JobForm::updateCommandPreview() {
  const ShellSplit split = splitShellWords(ss(command_->text()));
  const QColor chip = palette().color(QPalette::AlternateBase);
  const QColor text = palette().color(QPalette::Text);
  QString html;
  for (const std::string& word : split.words) {
    html += QStringLiteral(
                "<span style=\"background-color:%1; color:%2; font-family:monospace;\">"
                "&nbsp;%3&nbsp;</span> ")
                .arg(chip.name(), text.name(), qs(word).toHtmlEscaped());
  }
  if (split.words.empty()) {
    html = QStringLiteral("<i>%1</i>").arg(tr("no arguments yet").toHtmlEscaped());
  }
  if (!split.warning.empty()) {
    html += QStringLiteral("<br><span style=\"color:#ffb340;\">%1</span>")
                .arg(qs(split.warning).toHtmlEscaped());
  }
  command_preview_->setText(html);
}

QWidget* JobForm::widgetForField(const std::string& field) const {
  std::string f = field;
  while (!f.empty()) {
    f = aliasOf(f);
    if (auto* widget = findChild<QWidget*>(qs(f))) return widget;
    f = parentField(f);
  }
  return nullptr;
}

void JobForm::markWidget(QWidget* widget, const QString& message) {
  QString& text = marked_[widget];
  text += (text.isEmpty() ? QString() : QStringLiteral("\n")) + message;
  QPointer<ErrorOutline>& outline = outlines_[widget];
  if (!outline && widget->parentWidget()) outline = new ErrorOutline(widget);
  if (outline) outline->setActive(true);
  widget->setToolTip(text);
}

void JobForm::showProblems(const std::vector<job::SpecDiagnostic>& problems) {
  for (auto it = marked_.begin(); it != marked_.end(); ++it) {
    auto* widget = const_cast<QWidget*>(it.key());
    if (!findChildren<QWidget*>().contains(widget)) continue;  // a removed placement row
    widget->setToolTip(widget->property(kHelpProperty).toString());
    if (QPointer<ErrorOutline> outline = outlines_.value(widget)) outline->setActive(false);
  }
  marked_.clear();
  env_->clearMarks();
  metrics_->clearMarks();
  for (const job::SpecDiagnostic& d : problems) {
    QString message = qs(d.message);
    if (!d.hint.empty()) message += QStringLiteral(" (") + qs(d.hint) + QStringLiteral(")");
    const QString field = qs(d.field);
    if (field.startsWith(QLatin1String("env."))) {
      env_->markRow(field.mid(4), message);
    } else if (field.startsWith(QLatin1String("metrics.patterns."))) {
      metrics_->markRow(field.mid(17), message);
    }
    if (QWidget* widget = widgetForField(d.field)) {
      markWidget(widget, d.field.empty() ? message : field + QStringLiteral(": ") + message);
    }
  }
}

QString JobForm::problemText(const QWidget* widget) const { return marked_.value(widget); }

}  // namespace ringmaster::gui

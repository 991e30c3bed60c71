#pragma once
// The "Form" tab of the job editor: one field per setting of job spec v1, grouped as a person
// thinks about a job (what runs, where, how it trains). Every field widget is named after the
// spec field it edits ("world_size", "native.optimizer.lr", "placement[1].ranks"), which is how
// a validator diagnostic finds its field.

#include <QHash>
#include <QPointer>
#include <QWidget>
#include <string>
#include <vector>

#include "editor/job_draft.h"
#include "ringmaster/client/agent_status.h"
#include "ringmaster/job/spec.h"

class QFormLayout;
class QGroupBox;
class QLabel;
class QLineEdit;
class QRadioButton;

namespace ringmaster::gui {

class ChoiceField;
class ErrorOutline;
class IntField;
class KeyValueTable;
class PlacementTable;

class JobForm : public QWidget {
  Q_OBJECT
 public:
  explicit JobForm(QWidget* parent = nullptr);

  // Fills every field from `draft` without emitting edited(); a field already showing the same
  // value is left alone, so its cursor and selection stay.
  void setDraft(const JobDraft& draft);
  JobDraft draft() const;

  void setAgents(const std::vector<client::AgentStatus>& agents);

  // The field a diagnostic's dotted field path belongs to (the nearest enclosing one: "env.FOO"
  // is the env table); nullptr when the form has none (an unknown top-level key).
  QWidget* widgetForField(const std::string& field) const;
  // Outlines each field with a problem and puts the messages in its tooltip; clears the others.
  void showProblems(const std::vector<job::SpecDiagnostic>& problems);
  // The messages shown on `widget` ("" when none): what its tooltip says.
  QString problemText(const QWidget* widget) const;

 Q_SIGNALS:
  void edited();  // by the person

 private:
  QGroupBox* buildJobGroup();
  QGroupBox* buildCommandGroup();
  QGroupBox* buildPlacementGroup();
  QGroupBox* buildNativeGroup();
  QGroupBox* buildEnvGroup();
  QGroupBox* buildMetricsGroup();
  QLineEdit* lineEdit(const char* field, const QString& placeholder, const QString& help);
  IntField* intField(const char* field, int minimum, const QString& help);
  ChoiceField* choiceField(const char* field, const QStringList& choices, const QString& help);
  void onFieldEdited();
  void updateVisibility();
  void updateCommandPreview();
  void updateClusterSummary();
  void markWidget(QWidget* widget, const QString& message);

  // Job
  QLineEdit* name_;
  QLineEdit* description_;
  ChoiceField* launcher_;
  ChoiceField* backend_;
  QLineEdit* workdir_;
  QLineEdit* python_;
  IntField* max_restarts_;
  IntField* stop_grace_;
  // Command
  QGroupBox* command_group_;
  QLineEdit* command_;
  QLabel* command_preview_;
  // Placement
  QRadioButton* by_world_size_;
  QRadioButton* by_agent_;
  IntField* world_size_;
  QLabel* cluster_summary_;
  PlacementTable* placement_;
  // Native
  QGroupBox* native_group_;
  QFormLayout* dataset_layout_;
  QFormLayout* optimizer_layout_;
  ChoiceField* model_kind_;
  QLineEdit* hidden_;
  ChoiceField* activation_;
  ChoiceField* task_;
  ChoiceField* dataset_kind_;
  IntField* samples_;
  IntField* features_;
  IntField* classes_;
  IntField* dataset_seed_;
  QLineEdit* csv_path_;
  QLineEdit* images_;
  QLineEdit* labels_;
  QLineEdit* test_images_;
  QLineEdit* test_labels_;
  QLineEdit* label_column_;
  ChoiceField* standardize_;
  QLineEdit* eval_fraction_;
  IntField* batch_size_;
  ChoiceField* length_unit_;
  IntField* length_;
  ChoiceField* optimizer_;
  QLineEdit* lr_;
  QLineEdit* momentum_;
  ChoiceField* nesterov_;
  QLineEdit* beta1_;
  QLineEdit* beta2_;
  QLineEdit* eps_;
  QLineEdit* weight_decay_;
  IntField* warmup_steps_;
  ChoiceField* schedule_;
  IntField* grad_accumulation_;
  QLineEdit* clip_norm_;
  IntField* checkpoint_every_;
  QLineEdit* checkpoint_dir_;
  IntField* checkpoint_keep_;
  IntField* eval_every_;
  IntField* seed_;
  QFormLayout* strategy_layout_;
  IntField* average_every_;
  ChoiceField* data_split_;
  ChoiceField* compression_;
  QLineEdit* topk_ratio_;
  IntField* powersgd_rank_;
  IntField* pipeline_stages_;
  IntField* micro_batches_;
  IntField* ps_servers_;
  ChoiceField* ps_mode_;
  IntField* ps_max_staleness_;
  IntField* ps_max_lead_;
  // Env and metrics
  KeyValueTable* env_;
  KeyValueTable* metrics_;

  JobDraft loaded_;  // what the form does not show (the header comment) comes from here
  std::vector<client::AgentStatus> agents_;
  QHash<QWidget*, QPointer<ErrorOutline>> outlines_;
  QHash<const QWidget*, QString> marked_;  // widget -> its problem messages
  bool filling_ = false;
};

}  // namespace ringmaster::gui

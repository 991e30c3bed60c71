#pragma once
// JobEditor: the job editor of the desktop app. Two tabs kept in sync both ways: "Form" (one
// field per setting of job spec v1) and "YAML" (the text that is saved and launched). Every edit
// is validated with core's own validator (parseJobSpec, then the native trainer's
// parseNativeConfig, exactly what ringmasterctl reports); each problem shows on its field and in
// the list under the tabs, and Launch is enabled only when there is none.
//
// Thread safety: a QWidget; GUI thread only.

#include <QString>
#include <QStringList>
#include <QWidget>
#include <vector>

#include "ringmaster/job/spec.h"

class QLabel;
class QListWidget;
class QMenu;
class QPushButton;
class QScrollArea;
class QTabWidget;
class QTimer;
class QTreeWidget;

namespace ringmaster::client {
// "ringmaster/client/agent_status.h". Not included here: its protobuf Inventory has a method
// named slots(), which Qt's `slots` keyword macro breaks in any file that includes Qt first
// (this library builds with QT_NO_KEYWORDS).
struct AgentStatus;
}  // namespace ringmaster::client

namespace ringmaster::gui {

class JobForm;
class YamlTextEdit;
struct LaunchPreview;

class JobEditor : public QWidget {
  Q_OBJECT
 public:
  // QSettings key of the recent files (a QStringList, newest first).
  static constexpr const char* kRecentFilesKey = "editor/recentFiles";
  // An unsaved spec, kept (QSettings) a second after each edit until it is saved or discarded,
  // so that a crash of the app loses no draft.
  static constexpr const char* kDraftKey = "editor/draft";
  static constexpr const char* kDraftFileKey = "editor/draftFile";
  static constexpr int kMaxRecentFiles = 10;
  // How long the YAML tab waits after the last keystroke before it re-reads the text.
  static constexpr int kYamlDebounceMs = 300;

  // resources_dir: where templates are (RESOURCES/jobs/*.yaml, RESOURCES/jobs/examples/*.yaml).
  explicit JobEditor(const QString& resources_dir, QWidget* parent = nullptr);
  ~JobEditor() override;  // in the .cpp, where AgentStatus is complete

  void setYaml(const QString& yaml, const QString& file_name);  // fills the form too
  QString yaml() const;      // the YAML text (what Launch submits)
  QString fileName() const;  // "" for a spec not saved yet
  // Agents for the placement section: name, state, slots free/total, GPUs (from inventory).
  void setAgents(const std::vector<client::AgentStatus>& agents);
  bool isValid() const;  // no problems (and no YAML edit waiting to be checked)
  std::vector<job::SpecDiagnostic> problems() const;  // exactly the validator's diagnostics
  // The draft an earlier run left unsaved (it crashed, or was killed), back in the editor and
  // marked modified; false when there is none.
  bool restoreDraft();
  bool openFile(const QString& path);  // also adds it to recent files (QSettings kRecentFilesKey)
  bool saveFile(const QString& path);  // atomically; also adds it to recent files
  QString lastError() const { return last_error_; }  // why openFile/saveFile failed

  // The templates offered by "New from template", in menu order.
  QStringList templatePaths() const;
  // Starts an unsaved spec from a template.
  bool newFromTemplate(const QString& path);
  bool isModified() const { return modified_; }
  // Asks to save unsaved changes; false when the person cancels. For the main window's close.
  bool maybeSave();

  // The form field a diagnostic field path belongs to (nullptr when the form has none), and the
  // problem text shown on it: for tests and for pointing a person at a field.
  QWidget* fieldWidget(const QString& field) const;
  QString fieldProblem(const QString& field) const;
  // Applies a pending YAML edit now instead of after the debounce.
  void flushYamlEdits();

 Q_SIGNALS:
  void launchRequested(const QString& yaml, const QString& file_name);  // only when valid
  // A preflight of the agents the launch preview would use (client::runPreflight).
  void checkAgentsRequested(const QStringList& agents);
  void validityChanged(bool valid);
  void modificationChanged(bool modified);

 private:
  QWidget* buildToolbar();
  void onFormEdited();
  void onYamlEdited();
  void syncFormFromYaml();
  void validate();
  void showPreview(const LaunchPreview& preview);
  void saveDraft();
  void clearDraft();
  void setModified(bool modified);
  void showProblemAt(int index);
  void launch();
  void chooseAndOpen();
  bool save();
  bool saveAs();
  void fillTemplateMenu();
  void fillRecentMenu();
  void addRecentFile(const QString& path);
  void updateTitle();
  QString diagnosticFileName() const;

  QString resources_dir_;
  QString file_name_;
  QString last_error_;
  bool modified_ = false;
  bool valid_ = false;
  bool yaml_pending_ = false;
  bool updating_yaml_ = false;
  std::vector<job::SpecDiagnostic> problems_;
  std::vector<client::AgentStatus> agents_;
  bool agents_known_ = false;

  QTabWidget* tabs_;
  QScrollArea* form_scroll_;
  JobForm* form_;
  QLabel* unreadable_banner_;
  YamlTextEdit* yaml_;
  QLabel* status_;
  QListWidget* problem_list_;
  QLabel* title_;
  QPushButton* launch_;
  QMenu* template_menu_;
  QMenu* recent_menu_;
  QTimer* debounce_;
  QTimer* draft_timer_;
  QLabel* preview_summary_;
  QPushButton* check_agents_;   // "Check these agents first"
  QStringList preview_agents_;  // the agents of the launch preview, rank order
  QTreeWidget* preview_;        // objectName "launchPreview": one row per rank
};

}  // namespace ringmaster::gui

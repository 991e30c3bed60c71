#include "editor/job_editor.h"

#include <QAction>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QSettings>
#include <QShortcut>
#include <QStyle>
#include <QTabWidget>
#include <QTimer>
#include <QToolButton>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <set>

#include "editor/job_draft.h"
#include "editor/job_form.h"
#include "editor/launch_preview.h"
#include "editor/spec_check.h"
#include "editor/yaml_text_edit.h"
#include "ringmaster/client/agent_status.h"
#include "table_copy.h"

namespace ringmaster::gui {
namespace {

const QColor kGood(0x4c, 0xd9, 0x64);
const QColor kBad(0xff, 0x5f, 0x56);
constexpr int kMaxVisibleProblems = 6;

// The first comment line of a template, which says what it is for.
QString templateSummary(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly | QIODevice::Text)) return {};
  while (!file.atEnd()) {
    const QString line = QString::fromUtf8(file.readLine()).trimmed();
    if (line.startsWith('#')) return line.mid(1).trimmed();
    if (!line.isEmpty()) break;
  }
  return {};
}

JobDraft starterDraft() {
  JobDraft draft;
  draft.name = "new-job";
  draft.header_comment = "# A new job: fill in the form (or the YAML), then Launch.\n";
  return draft;
}

}  // namespace

JobEditor::JobEditor(const QString& resources_dir, QWidget* parent)
    : QWidget(parent),
      resources_dir_(resources_dir),
      tabs_(new QTabWidget(this)),
      form_scroll_(new QScrollArea(this)),
      form_(new JobForm),
      unreadable_banner_(new QLabel(this)),
      yaml_(new YamlTextEdit(this)),
      status_(new QLabel(this)),
      problem_list_(new QListWidget(this)),
      title_(new QLabel(this)),
      launch_(new QPushButton(this)),
      template_menu_(new QMenu(this)),
      recent_menu_(new QMenu(this)),
      debounce_(new QTimer(this)),
      draft_timer_(new QTimer(this)),
      preview_summary_(new QLabel(this)),
      preview_(new QTreeWidget(this)) {
  form_scroll_->setWidget(form_);
  form_scroll_->setWidgetResizable(true);
  form_scroll_->setFrameShape(QFrame::NoFrame);
  unreadable_banner_->setWordWrap(true);
  unreadable_banner_->setMargin(8);
  unreadable_banner_->setText(
      tr("The YAML cannot be read (see the problems below). The form shows the last version that "
         "could be read and is locked until the YAML tab is fixed."));
  unreadable_banner_->setStyleSheet(
      QStringLiteral("QLabel { background-color: #5c2b29; color: #ffffff; border-radius: 3px; }"));
  unreadable_banner_->hide();
  auto* form_tab = new QWidget(this);
  auto* form_layout = new QVBoxLayout(form_tab);
  form_layout->setContentsMargins(0, 0, 0, 0);
  form_layout->addWidget(unreadable_banner_);
  form_layout->addWidget(form_scroll_);
  tabs_->addTab(form_tab, tr("Form"));
  tabs_->addTab(yaml_, tr("YAML"));
  // What each rank would get, before anything is launched.
  preview_->setObjectName(QStringLiteral("launchPreview"));
  preview_->setHeaderLabels({tr("Rank"), tr("Agent"), tr("Host"), tr("LOCAL_RANK"), tr("Device"),
                             tr("CUDA_VISIBLE_DEVICES")});
  preview_->setRootIsDecorated(false);
  preview_->setAlternatingRowColors(true);
  preview_->setUniformRowHeights(true);
  preview_summary_->setWordWrap(true);
  preview_summary_->setMargin(8);
  preview_summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* preview_tab = new QWidget(this);
  auto* preview_layout = new QVBoxLayout(preview_tab);
  preview_layout->setContentsMargins(0, 0, 0, 0);
  // The preflight of the agents this launch would use: offered, one click, never in the way.
  check_agents_ = new QPushButton(tr("Check these agents first"), preview_tab);
  check_agents_->setObjectName(QStringLiteral("checkAgents"));
  check_agents_->setToolTip(
      tr("A preflight of the agents this launch would use: free disk, clock, GPU faults and the "
         "links between them"));
  check_agents_->setVisible(false);
  connect(check_agents_, &QPushButton::clicked, this,
          [this] { Q_EMIT checkAgentsRequested(preview_agents_); });
  auto* summary_row = new QHBoxLayout;
  summary_row->setContentsMargins(0, 4, 8, 0);  // the button off the window's edge
  summary_row->addWidget(preview_summary_, 1);
  summary_row->addWidget(check_agents_, 0, Qt::AlignTop);
  preview_layout->addLayout(summary_row);
  preview_layout->addWidget(preview_, 1);
  tabs_->addTab(preview_tab, tr("Launch preview"));
  tabs_->setDocumentMode(true);

  QFont status_font = status_->font();
  status_font.setBold(true);
  status_->setFont(status_font);
  problem_list_->setWordWrap(true);
  problem_list_->setIconSize(QSize(16, 16));
  problem_list_->setToolTip(tr("Click a problem to go to its line and field"));
  problem_list_->setObjectName(QStringLiteral("problems"));
  problem_list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  installTableCopy(problem_list_);  // Ctrl+C: the selected problems' lines
  auto* problems_panel = new QWidget(this);
  auto* problems_layout = new QVBoxLayout(problems_panel);
  problems_layout->setContentsMargins(8, 4, 8, 8);
  problems_layout->addWidget(status_);
  problems_layout->addWidget(problem_list_);
  problems_panel->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(buildToolbar());
  layout->addWidget(tabs_, 1);
  layout->addWidget(problems_panel);

  draft_timer_->setSingleShot(true);
  draft_timer_->setInterval(1000);
  connect(draft_timer_, &QTimer::timeout, this, &JobEditor::saveDraft);
  debounce_->setSingleShot(true);
  debounce_->setInterval(kYamlDebounceMs);
  connect(debounce_, &QTimer::timeout, this, &JobEditor::flushYamlEdits);
  connect(form_, &JobForm::edited, this, &JobEditor::onFormEdited);
  connect(yaml_, &QPlainTextEdit::textChanged, this, &JobEditor::onYamlEdited);
  connect(problem_list_, &QListWidget::itemActivated, this,
          [this](QListWidgetItem* item) { showProblemAt(problem_list_->row(item)); });
  connect(problem_list_, &QListWidget::itemClicked, this,
          [this](QListWidgetItem* item) { showProblemAt(problem_list_->row(item)); });

  setYaml(QString::fromStdString(writeJobDraft(starterDraft())), QString());
}

QWidget* JobEditor::buildToolbar() {
  auto* bar = new QWidget(this);
  auto* row = new QHBoxLayout(bar);
  row->setContentsMargins(8, 6, 8, 6);
  const auto button = [&](const QString& text, QStyle::StandardPixmap icon) {
    auto* b = new QToolButton(bar);
    b->setText(text);
    b->setIcon(style()->standardIcon(icon));
    b->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    b->setAutoRaise(true);
    row->addWidget(b);
    return b;
  };
  QToolButton* from_template = button(tr("New from template"), QStyle::SP_FileIcon);
  from_template->setMenu(template_menu_);
  from_template->setPopupMode(QToolButton::InstantPopup);
  connect(template_menu_, &QMenu::aboutToShow, this, &JobEditor::fillTemplateMenu);
  QToolButton* open = button(tr("Open…"), QStyle::SP_DialogOpenButton);
  open->setShortcut(QKeySequence::Open);
  connect(open, &QToolButton::clicked, this, &JobEditor::chooseAndOpen);
  QToolButton* save = button(tr("Save"), QStyle::SP_DialogSaveButton);
  save->setShortcut(QKeySequence::Save);
  connect(save, &QToolButton::clicked, this, &JobEditor::save);
  QToolButton* save_as = button(tr("Save As…"), QStyle::SP_DialogSaveButton);
  connect(save_as, &QToolButton::clicked, this, &JobEditor::saveAs);
  QToolButton* recent = button(tr("Recent"), QStyle::SP_FileDialogDetailedView);
  recent->setMenu(recent_menu_);
  recent->setPopupMode(QToolButton::InstantPopup);
  connect(recent_menu_, &QMenu::aboutToShow, this, &JobEditor::fillRecentMenu);

  row->addSpacing(16);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  row->addWidget(title_, 1);

  launch_->setText(tr("Launch"));
  launch_->setIcon(style()->standardIcon(QStyle::SP_MediaPlay));
  launch_->setObjectName(QStringLiteral("launch"));
  launch_->setMinimumWidth(120);
  QFont font = launch_->font();
  font.setBold(true);
  launch_->setFont(font);
  // The one action that starts something stands out (accent colour) while it is enabled.
  QPalette accent = launch_->palette();
  for (QPalette::ColorGroup group : {QPalette::Active, QPalette::Inactive}) {
    accent.setColor(group, QPalette::Button, accent.color(QPalette::Highlight));
    accent.setColor(group, QPalette::ButtonText, accent.color(QPalette::HighlightedText));
  }
  launch_->setPalette(accent);
  connect(launch_, &QPushButton::clicked, this, &JobEditor::launch);
  auto* shortcut = new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return), this);
  shortcut->setContext(Qt::WidgetWithChildrenShortcut);
  connect(shortcut, &QShortcut::activated, this, &JobEditor::launch);
  row->addWidget(launch_);
  return bar;
}

void JobEditor::setYaml(const QString& yaml, const QString& file_name) {
  debounce_->stop();
  yaml_pending_ = false;
  file_name_ = file_name;
  updating_yaml_ = true;
  yaml_->setPlainText(yaml);
  updating_yaml_ = false;
  syncFormFromYaml();
  validate();
  setModified(false);
  updateTitle();
}

QString JobEditor::yaml() const { return yaml_->toPlainText(); }

QString JobEditor::fileName() const { return file_name_; }

JobEditor::~JobEditor() = default;

void JobEditor::setAgents(const std::vector<client::AgentStatus>& agents) {
  form_->setAgents(agents);
  agents_ = agents;
  agents_known_ = true;
  validate();  // free slots and agents' states change what would be refused
}

bool JobEditor::isValid() const { return valid_ && !yaml_pending_; }

std::vector<job::SpecDiagnostic> JobEditor::problems() const { return problems_; }

void JobEditor::onFormEdited() {
  // The form is the source now: the YAML is rewritten from it (one undoable step in the YAML
  // tab) and checked at once; there is no typing in the YAML tab to wait for.
  debounce_->stop();
  yaml_pending_ = false;
  updating_yaml_ = true;
  yaml_->replaceText(QString::fromStdString(writeJobDraft(form_->draft())));
  updating_yaml_ = false;
  validate();
  setModified(true);
}

void JobEditor::onYamlEdited() {
  if (updating_yaml_) return;
  yaml_pending_ = true;
  launch_->setEnabled(false);  // until the new text is checked
  setModified(true);
  debounce_->start();
}

void JobEditor::flushYamlEdits() {
  if (!yaml_pending_) return;
  debounce_->stop();
  yaml_pending_ = false;
  syncFormFromYaml();
  validate();
}

void JobEditor::syncFormFromYaml() {
  const std::optional<JobDraft> draft = readJobDraft(yaml_->toPlainText().toStdString());
  unreadable_banner_->setVisible(!draft.has_value());
  form_->setEnabled(draft.has_value());
  if (draft) form_->setDraft(*draft);
}

QString JobEditor::diagnosticFileName() const {
  return file_name_.isEmpty() ? QStringLiteral("untitled.yaml") : file_name_;
}

void JobEditor::validate() {
  const std::string text = yaml_->toPlainText().toStdString();
  problems_ = checkSpecText(text, diagnosticFileName().toStdString());
  // A spec that is fine in itself may still not fit the cluster as it is now.
  LaunchPreview preview;
  preview.note = "fix the problems below first";
  if (problems_.empty()) {
    preview = previewLaunch(text, diagnosticFileName().toStdString(), agents_, agents_known_);
    problems_ = preview.problems;
  } else if (agents_known_) {
    // The cluster's check needs a spec without problems; an unknown agent is worth naming now.
    std::vector<std::string> names;
    for (const client::AgentStatus& agent : agents_) names.push_back(agent.name);
    for (job::SpecDiagnostic& d :
         unknownPlacementAgents(text, diagnosticFileName().toStdString(), names)) {
      const bool listed = std::any_of(problems_.begin(), problems_.end(),
                                      [&](const auto& p) { return p.field == d.field; });
      if (!listed) problems_.push_back(std::move(d));
    }
    std::stable_sort(problems_.begin(), problems_.end(),
                     [](const auto& a, const auto& b) { return a.line < b.line; });
  }
  showPreview(preview);
  form_->showProblems(problems_);

  QSet<int> lines;
  problem_list_->clear();
  const QIcon icon = style()->standardIcon(QStyle::SP_MessageBoxCritical);
  for (const job::SpecDiagnostic& d : problems_) {
    if (d.line > 0) lines.insert(d.line);
    auto* item = new QListWidgetItem(icon, QString::fromStdString(problemLine(d)), problem_list_);
    item->setToolTip(QString::fromStdString(d.toString()));
  }
  yaml_->setProblemLines(lines);

  const bool valid = problems_.empty();
  QPalette status_palette = status_->palette();
  status_palette.setColor(QPalette::WindowText, valid ? kGood : kBad);
  status_->setPalette(status_palette);
  if (valid) {
    status_->setText(tr("✔ No problems: ready to launch"));
  } else {
    status_->setText(problems_.size() == 1
                         ? tr("✖ 1 problem: click it to go to its line")
                         : tr("✖ %1 problems: click one to go to its line").arg(problems_.size()));
  }
  // As tall as its problems (up to a few), so that the form keeps the room when all is well.
  if (!valid) {
    // Row by row: a long problem wraps onto a second line, which a height of one row each cut.
    const int rows = std::min<int>(problems_.size(), kMaxVisibleProblems);
    int height = 0;
    for (int i = 0; i < rows; ++i) height += std::max(problem_list_->sizeHintForRow(i), 20);
    problem_list_->setFixedHeight(height + 2 * problem_list_->frameWidth() + 4);
  }
  problem_list_->setVisible(!valid);
  launch_->setEnabled(valid);
  launch_->setToolTip(valid ? tr("Submit this job to the cluster (Ctrl+Return)")
                            : tr("Fix the problems listed below first"));
  if (valid != valid_) {
    valid_ = valid;
    Q_EMIT validityChanged(valid);
  }
}

void JobEditor::showPreview(const LaunchPreview& preview) {
  preview_->clear();
  preview_agents_.clear();
  for (const LaunchPreview::Rank& r : preview.ranks) {
    const QString agent = QString::fromStdString(r.agent);
    if (!preview_agents_.contains(agent)) preview_agents_ << agent;
  }
  check_agents_->setVisible(!preview_agents_.isEmpty());
  if (preview.ranks.empty()) {
    preview_summary_->setText(preview.problems.empty()
                                  ? tr("No preview: %1.").arg(QString::fromStdString(preview.note))
                                  : tr("This launch would be refused: see the problems below."));
    return;
  }
  QString summary = tr("WORLD_SIZE=%1, MASTER_ADDR=%2 (MASTER_PORT: a free port of that host, "
                       "picked at launch). From the agents' latest inventories: what each rank "
                       "gets if you launch now.")
                        .arg(preview.world_size)
                        .arg(QString::fromStdString(preview.master_addr));
  if (!preview.cpu_reason.empty()) {
    summary +=
        tr(" Backend auto trains on the CPU: %1.").arg(QString::fromStdString(preview.cpu_reason));
  }
  preview_summary_->setText(summary);
  for (const LaunchPreview::Rank& r : preview.ranks) {
    auto* item = new QTreeWidgetItem(preview_);
    item->setData(0, Qt::DisplayRole, r.rank);
    item->setText(1, QString::fromStdString(r.agent));
    item->setText(2, QString::fromStdString(r.host));
    item->setData(3, Qt::DisplayRole, r.local_rank);
    item->setText(4,
                  r.device.empty() ? tr("(the script picks)") : QString::fromStdString(r.device));
    item->setText(5, QString::fromStdString(r.cuda_visible_devices));
  }
  for (int c = 0; c < preview_->columnCount(); ++c) preview_->resizeColumnToContents(c);
}

void JobEditor::showProblemAt(int index) {
  if (index < 0 || index >= static_cast<int>(problems_.size())) return;
  const job::SpecDiagnostic& d = problems_[index];
  QWidget* field = form_->widgetForField(d.field);
  if (d.line > 0) yaml_->goToLine(d.line);
  if (field && field->isVisibleTo(form_)) form_scroll_->ensureWidgetVisible(field, 40, 40);
  // In the form, a problem with a field goes to that field; everything else to its line.
  if (tabs_->currentIndex() == 0 && field && field->isVisibleTo(form_) && form_->isEnabled()) {
    field->setFocus(Qt::OtherFocusReason);
    return;
  }
  tabs_->setCurrentWidget(yaml_);
  yaml_->setFocus(Qt::OtherFocusReason);
}

void JobEditor::launch() {
  flushYamlEdits();
  if (!isValid()) return;
  Q_EMIT launchRequested(yaml(), file_name_);
}

QWidget* JobEditor::fieldWidget(const QString& field) const {
  return form_->widgetForField(field.toStdString());
}

QString JobEditor::fieldProblem(const QString& field) const {
  const QWidget* widget = fieldWidget(field);
  return widget ? form_->problemText(widget) : QString();
}

void JobEditor::setModified(bool modified) {
  // A second after an edit the draft is kept; saved or replaced, it is gone.
  if (modified && !draft_timer_->isActive()) draft_timer_->start();
  if (!modified && modified_) clearDraft();
  if (modified == modified_) return;
  modified_ = modified;
  updateTitle();
  Q_EMIT modificationChanged(modified);
}

void JobEditor::updateTitle() {
  const QString name =
      file_name_.isEmpty() ? tr("untitled (not saved yet)") : QDir::toNativeSeparators(file_name_);
  title_->setText(modified_ ? name + tr("  — modified") : name);
  title_->setToolTip(name);
}

// --- files ---

QStringList JobEditor::templatePaths() const {
  QStringList paths;
  for (const QString& folder : {QStringLiteral("jobs"), QStringLiteral("jobs/examples"),
                                QStringLiteral("jobs/strategies")}) {
    const QDir dir(QDir(resources_dir_).filePath(folder));
    for (const QString& name : dir.entryList({QStringLiteral("*.yaml")}, QDir::Files, QDir::Name)) {
      paths << dir.filePath(name);
    }
  }
  return paths;
}

bool JobEditor::newFromTemplate(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly | QIODevice::Text)) {
    last_error_ = tr("Cannot read the template %1: %2").arg(path, file.errorString());
    return false;
  }
  setYaml(QString::fromUtf8(file.readAll()), QString());
  return true;
}

bool JobEditor::openFile(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly | QIODevice::Text)) {
    last_error_ = tr("Cannot open %1: %2").arg(path, file.errorString());
    return false;
  }
  setYaml(QString::fromUtf8(file.readAll()), QFileInfo(path).absoluteFilePath());
  addRecentFile(file_name_);
  return true;
}

bool JobEditor::saveFile(const QString& path) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
    last_error_ = tr("Cannot write %1: %2").arg(path, file.errorString());
    return false;
  }
  QString text = yaml();
  if (!text.endsWith('\n')) text += '\n';
  file.write(text.toUtf8());
  if (!file.commit()) {
    last_error_ = tr("Cannot write %1: %2").arg(path, file.errorString());
    return false;
  }
  file_name_ = QFileInfo(path).absoluteFilePath();
  addRecentFile(file_name_);
  flushYamlEdits();
  validate();  // diagnostics name the file
  setModified(false);
  updateTitle();
  return true;
}

bool JobEditor::save() {
  if (file_name_.isEmpty()) return saveAs();
  if (saveFile(file_name_)) return true;
  QMessageBox::warning(this, tr("Save"), last_error_);
  return false;
}

bool JobEditor::saveAs() {
  const QString suggested =
      file_name_.isEmpty()
          ? QDir::home().filePath(QString::fromStdString(form_->draft().name) + ".yaml")
          : file_name_;
  const QString path = QFileDialog::getSaveFileName(this, tr("Save job spec"), suggested,
                                                    tr("Job specs (*.yaml *.yml)"));
  if (path.isEmpty()) return false;
  if (saveFile(path)) return true;
  QMessageBox::warning(this, tr("Save"), last_error_);
  return false;
}

bool JobEditor::maybeSave() {
  if (!modified_) return true;
  const auto answer = QMessageBox::question(
      this, tr("Unsaved job spec"), tr("Save the changes to %1?").arg(title_->toolTip()),
      QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
  if (answer == QMessageBox::Cancel) return false;
  if (answer == QMessageBox::Save) return save();
  clearDraft();  // discarded on purpose
  return true;
}

void JobEditor::saveDraft() {
  if (!modified_) return;
  QSettings settings;
  settings.setValue(kDraftKey, yaml_->toPlainText());
  settings.setValue(kDraftFileKey, file_name_);
}

void JobEditor::clearDraft() {
  draft_timer_->stop();
  QSettings settings;
  settings.remove(kDraftKey);
  settings.remove(kDraftFileKey);
}

bool JobEditor::restoreDraft() {
  const QSettings settings;
  const QString draft = settings.value(kDraftKey).toString();
  if (draft.isEmpty()) return false;
  setYaml(draft, settings.value(kDraftFileKey).toString());
  setModified(true);
  return true;
}

void JobEditor::chooseAndOpen() {
  if (!maybeSave()) return;
  const QString start = file_name_.isEmpty() ? QDir(resources_dir_).filePath("jobs")
                                             : QFileInfo(file_name_).absolutePath();
  const QString path = QFileDialog::getOpenFileName(this, tr("Open job spec"), start,
                                                    tr("Job specs (*.yaml *.yml);;All files (*)"));
  if (path.isEmpty()) return;
  if (!openFile(path)) QMessageBox::warning(this, tr("Open"), last_error_);
}

void JobEditor::fillTemplateMenu() {
  template_menu_->clear();
  const QString jobs_dir = QDir(resources_dir_).filePath("jobs");
  for (const QString& path : templatePaths()) {
    QAction* action = template_menu_->addAction(QDir(jobs_dir).relativeFilePath(path));
    const QString summary = templateSummary(path);
    action->setToolTip(summary);
    action->setStatusTip(summary);
    connect(action, &QAction::triggered, this, [this, path] {
      if (!maybeSave()) return;
      if (!newFromTemplate(path)) QMessageBox::warning(this, tr("Template"), last_error_);
    });
  }
  template_menu_->setToolTipsVisible(true);
  if (template_menu_->isEmpty()) {
    template_menu_->addAction(tr("No templates in %1").arg(jobs_dir))->setEnabled(false);
  }
}

void JobEditor::fillRecentMenu() {
  recent_menu_->clear();
  const QStringList recent = QSettings().value(kRecentFilesKey).toStringList();
  for (const QString& path : recent) {
    QAction* action = recent_menu_->addAction(QDir::toNativeSeparators(path));
    action->setEnabled(QFileInfo::exists(path));
    connect(action, &QAction::triggered, this, [this, path] {
      if (!maybeSave()) return;
      if (!openFile(path)) QMessageBox::warning(this, tr("Open"), last_error_);
    });
  }
  if (recent.isEmpty()) {
    recent_menu_->addAction(tr("No recent files"))->setEnabled(false);
    return;
  }
  recent_menu_->addSeparator();
  connect(recent_menu_->addAction(tr("Clear the list")), &QAction::triggered, this,
          [] { QSettings().remove(kRecentFilesKey); });
}

void JobEditor::addRecentFile(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value(kRecentFilesKey).toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecentFiles) recent.removeLast();
  settings.setValue(kRecentFilesKey, recent);
}

}  // namespace ringmaster::gui

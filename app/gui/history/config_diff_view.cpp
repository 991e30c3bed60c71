#include "history/config_diff_view.h"

#include <QCheckBox>
#include <QFont>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "table_copy.h"
#include "table_padding.h"

namespace ringmaster::gui {
namespace {
// Amber, translucent: readable over a light and a dark base alike.
const QColor kDiffTint(255, 183, 0, 56);
}  // namespace

ConfigDiffView::ConfigDiffView(std::vector<RunSpec> runs, QWidget* parent)
    : QWidget(parent),
      only_differences_(new QCheckBox(tr("Only differences"), this)),
      summary_(new QLabel(this)),
      table_(new QTableWidget(this)) {
  std::vector<FlatSpec> specs;
  for (RunSpec& run : runs) {
    if (run.spec_yaml.empty()) {
      left_out_ << tr("%1 (the history has no spec for it)").arg(run.label);
      continue;
    }
    Result<FlatSpec> flat = flattenSpec(run.spec_yaml);
    if (!flat.isOk()) {
      left_out_ << QStringLiteral("%1 (%2)").arg(run.label,
                                                 QString::fromStdString(flat.status().message()));
      continue;
    }
    specs.push_back(std::move(*flat));
    runs_.push_back(std::move(run));
  }
  rows_ = diffSpecs(specs);

  only_differences_->setObjectName(QStringLiteral("configOnlyDifferences"));
  only_differences_->setToolTip(tr("Leave out the keys every run has the same value for"));
  only_differences_->setChecked(true);
  summary_->setObjectName(QStringLiteral("configSummary"));
  summary_->setWordWrap(true);
  table_->setObjectName(QStringLiteral("configTable"));
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setWordWrap(false);
  table_->setShowGrid(false);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 8);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->horizontalHeader()->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);
  padTableColumns(table_);  // room between a right-aligned number and the next column
  installTableCopy(table_);
  QStringList headers{tr("Key")};
  for (const RunSpec& run : runs_) headers << run.label;
  table_->setColumnCount(static_cast<int>(headers.size()));
  table_->setHorizontalHeaderLabels(headers);
  // A run's name and job id cut in the middle where its column is narrow: both ends tell runs
  // apart ("mlp-native · 261129-06…0fd0cc"); the whole label on hover.
  table_->horizontalHeader()->setTextElideMode(Qt::ElideMiddle);
  for (int c = 1; c < table_->columnCount(); ++c) {
    table_->horizontalHeaderItem(c)->setToolTip(headers[c]);
  }

  auto* top = new QHBoxLayout;
  top->addWidget(only_differences_);
  top->addSpacing(12);
  top->addWidget(summary_, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(table_, 1);
  connect(only_differences_, &QCheckBox::toggled, this, &ConfigDiffView::fill);
  fill();
}

void ConfigDiffView::setOnlyDifferences(bool only) { only_differences_->setChecked(only); }

void ConfigDiffView::fill() {
  const bool only = only_differences_->isChecked();
  table_->setRowCount(0);
  QFont bold = table_->font();
  bold.setBold(true);
  const QBrush missing = palette().brush(QPalette::PlaceholderText);
  int differing = 0;
  for (const SpecDiffRow& row : rows_) {
    if (row.differs) ++differing;
    if (only && !row.differs) continue;
    const int r = table_->rowCount();
    table_->insertRow(r);
    auto* key = new QTableWidgetItem(QString::fromStdString(row.key));
    table_->setItem(r, 0, key);
    for (size_t s = 0; s < row.values.size(); ++s) {
      auto* item = new QTableWidgetItem(row.present[s] ? QString::fromStdString(row.values[s])
                                                       : QStringLiteral("—"));
      item->setToolTip(row.present[s] ? item->text() : tr("not in this run's spec"));
      if (!row.present[s]) item->setForeground(missing);
      // Bold where this run's value is not the first run's: the change to look at.
      if (s > 0 && (row.present[s] != row.present[0] || row.values[s] != row.values[0])) {
        item->setFont(bold);
      }
      table_->setItem(r, static_cast<int>(s) + 1, item);
    }
    if (row.differs) {
      for (int c = 0; c < table_->columnCount(); ++c) table_->item(r, c)->setBackground(kDiffTint);
    }
  }
  // Sized to what is shown now: the rows every run agrees on may hold the widest values.
  table_->resizeColumnsToContents();
  for (int c = 0; c < table_->columnCount(); ++c) {
    table_->setColumnWidth(c, std::min(table_->columnWidth(c) + 16, 420));
  }
  QString text = rows_.size() == 1 ? tr("%1 of 1 key differs").arg(differing)
                                   : tr("%1 of %2 keys differ").arg(differing).arg(rows_.size());
  if (runs_.size() < 2) text += tr(" — fewer than two runs have a spec to compare");
  if (!left_out_.isEmpty()) text += tr(" · left out: %1").arg(left_out_.join(QStringLiteral("; ")));
  summary_->setText(text);
}

QStringList ConfigDiffView::shownKeys() const {
  QStringList keys;
  for (int r = 0; r < table_->rowCount(); ++r) keys << table_->item(r, 0)->text();
  return keys;
}

QString ConfigDiffView::summary() const { return summary_->text(); }

}  // namespace ringmaster::gui

#include "editor/key_value_table.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace ringmaster::gui {
namespace {
constexpr int kMinVisibleRows = 3;
constexpr int kMaxVisibleRows = 8;
}  // namespace

KeyValueTable::KeyValueTable(const QString& key_header, const QString& value_header,
                             const QString& add_label, QWidget* parent)
    : QWidget(parent), table_(new QTableWidget(0, 2, this)) {
  table_->setHorizontalHeaderLabels({key_header, value_header});
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Interactive);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setColumnWidth(0, 180);
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setAlternatingRowColors(true);
  table_->setEditTriggers(QAbstractItemView::AllEditTriggers);
  table_->setVerticalScrollMode(QAbstractItemView::ScrollPerPixel);

  auto* add = new QPushButton(add_label, this);
  auto* remove = new QPushButton(tr("Remove"), this);
  remove->setEnabled(false);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(add);
  buttons->addWidget(remove);
  buttons->addStretch();
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(table_);
  layout->addLayout(buttons);

  connect(add, &QPushButton::clicked, this, [this] {
    filling_ = true;
    const int row = table_->rowCount();
    table_->insertRow(row);
    table_->setItem(row, 0, new QTableWidgetItem);
    table_->setItem(row, 1, new QTableWidgetItem);
    filling_ = false;
    fitHeight();
    table_->setCurrentCell(row, 0);
    table_->editItem(table_->item(row, 0));
  });
  connect(remove, &QPushButton::clicked, this, [this] {
    const int row = table_->currentRow();
    if (row < 0) return;
    table_->removeRow(row);
    fitHeight();
    Q_EMIT edited();
  });
  connect(table_, &QTableWidget::currentCellChanged, this,
          [this, remove](int row) { remove->setEnabled(row >= 0); });
  connect(table_, &QTableWidget::itemChanged, this, [this] {
    if (!filling_) Q_EMIT edited();
  });
  fitHeight();
}

void KeyValueTable::setPairs(const Pairs& pairs) {
  if (pairs == this->pairs()) return;  // keeps the person's selection and empty rows
  filling_ = true;
  table_->setRowCount(0);
  for (const auto& [key, value] : pairs) {
    const int row = table_->rowCount();
    table_->insertRow(row);
    table_->setItem(row, 0, new QTableWidgetItem(key));
    table_->setItem(row, 1, new QTableWidgetItem(value));
  }
  filling_ = false;
  fitHeight();
}

KeyValueTable::Pairs KeyValueTable::pairs() const {
  Pairs out;
  for (int row = 0; row < table_->rowCount(); ++row) {
    const QTableWidgetItem* key = table_->item(row, 0);
    const QTableWidgetItem* value = table_->item(row, 1);
    const QString k = key ? key->text() : QString();
    const QString v = value ? value->text() : QString();
    if (k.isEmpty() && v.isEmpty()) continue;
    out.emplace_back(k, v);
  }
  return out;
}

bool KeyValueTable::markRow(const QString& key, const QString& message) {
  filling_ = true;
  bool found = false;
  for (int row = 0; row < table_->rowCount(); ++row) {
    QTableWidgetItem* item = table_->item(row, 0);
    if (!item || item->text() != key) continue;
    const QColor base = palette().color(QPalette::Base);
    const QColor tint = QColor::fromRgbF(base.redF() * 0.6 + 0.4, base.greenF() * 0.6 + 0.04,
                                         base.blueF() * 0.6 + 0.04);
    for (int column = 0; column < 2; ++column) {
      if (QTableWidgetItem* cell = table_->item(row, column)) {
        cell->setBackground(tint);
        cell->setToolTip(message);
      }
    }
    found = true;
  }
  filling_ = false;
  return found;
}

void KeyValueTable::clearMarks() {
  filling_ = true;
  for (int row = 0; row < table_->rowCount(); ++row) {
    for (int column = 0; column < 2; ++column) {
      if (QTableWidgetItem* cell = table_->item(row, column)) {
        cell->setData(Qt::BackgroundRole, QVariant());
        cell->setToolTip(QString());
      }
    }
  }
  filling_ = false;
}

void KeyValueTable::fitHeight() {
  // Tall enough for its rows (up to a point) so that a short env list needs no scrolling.
  const int rows = std::clamp(table_->rowCount() + 1, kMinVisibleRows, kMaxVisibleRows);
  const int row_height = table_->verticalHeader()->defaultSectionSize();
  table_->setFixedHeight(table_->horizontalHeader()->sizeHint().height() + rows * row_height +
                         2 * table_->frameWidth());
}

}  // namespace ringmaster::gui

#include "history/history_proxy.h"

#include <QCollator>
#include <QLocale>
#include <algorithm>

#include "history/history_model.h"
#include "ringmaster/store/preflight_report.h"

namespace ringmaster::gui {

HistoryProxy::HistoryProxy(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(HistoryModel::kSortRole);
  // Re-sorts when a running job's duration ticks or a refresh changes values.
  setDynamicSortFilter(true);
}

void HistoryProxy::setFilterWords(const QString& text) {
  QStringList words = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
  if (words == words_) return;
  words_ = std::move(words);
  invalidateRowsFilter();
}

void HistoryProxy::setStateFilter(const QStringList& states) {
  if (states == states_) return;
  states_ = states;
  invalidateRowsFilter();
}

void HistoryProxy::setShowArchived(bool show) {
  if (show == show_archived_) return;
  show_archived_ = show;
  invalidateRowsFilter();
}

bool HistoryProxy::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
  const QAbstractItemModel* model = sourceModel();
  if (!show_archived_ &&
      model->index(source_row, 0, source_parent).data(HistoryModel::kArchivedRole).toBool()) {
    return false;
  }
  if (!states_.isEmpty() &&
      !states_.contains(
          model->index(source_row, HistoryModel::kState, source_parent).data().toString())) {
    return false;
  }
  const QString name =
      model->index(source_row, HistoryModel::kName, source_parent).data().toString();
  if (name.startsWith(QLatin1String(store::kPreflightJobPrefix)) && !showsLinkTests()) {
    return false;
  }
  if (words_.isEmpty()) return true;
  const QString id =
      model->index(source_row, HistoryModel::kJobId, source_parent).data().toString();
  const QString state =
      model->index(source_row, HistoryModel::kState, source_parent).data().toString();
  for (const QString& word : words_) {
    if (!name.contains(word, Qt::CaseInsensitive) && !id.contains(word, Qt::CaseInsensitive) &&
        !state.contains(word, Qt::CaseInsensitive)) {
      return false;
    }
  }
  return true;
}

bool HistoryProxy::showsLinkTests() const {
  const QLatin1String prefix(store::kPreflightJobPrefix);
  return std::any_of(words_.begin(), words_.end(), [&](const QString& word) {
    return prefix.contains(word, Qt::CaseInsensitive);
  });
}

bool HistoryProxy::lessThan(const QModelIndex& left, const QModelIndex& right) const {
  const QVariant l = left.data(sortRole());
  const QVariant r = right.data(sortRole());
  // Qt sorts descending by calling lessThan(right, left): "missing is greater" ascending and
  // "missing is smaller" descending keeps missing values at the bottom both ways.
  const bool missing_is_greater = sortOrder() == Qt::AscendingOrder;
  if (!l.isValid() || !r.isValid()) {
    if (l.isValid() == r.isValid()) return false;
    return l.isValid() == missing_is_greater;
  }
  if (l.typeId() == QMetaType::QString && r.typeId() == QMetaType::QString) {
    // Names in natural order: "tiny-19" before "tiny-190", "run-9" before "run-10".
    static const QCollator natural = [] {
      QCollator c(QLocale(QLocale::English));  // the C locale has no numeric mode
      c.setNumericMode(true);
      c.setCaseSensitivity(Qt::CaseInsensitive);
      return c;
    }();
    return natural.compare(l.toString(), r.toString()) < 0;
  }
  return QVariant::compare(l, r) == QPartialOrdering::Less;
}

}  // namespace ringmaster::gui

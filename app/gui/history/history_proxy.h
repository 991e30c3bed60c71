#pragma once
// Filtering and sorting of HistoryModel rows. Sorting compares HistoryModel::kSortRole (real
// values, not display strings; names in natural order, "tiny-19" before "tiny-190"); rows
// without a value (no loss reported) sort last in either order. The filter is a list of words,
// each of which must occur (case-insensitively) in the run's name, job id or state:
// "resnet failed" shows the failed resnet runs. A state filter (the History's state box) keeps
// only runs in one of the given states. Archived runs show only when asked for. A preflight's
// link tests (dozens to thousands of seconds-long jobs: the Cluster view's Check cluster keeps
// their report) show only when a filter word names them ("preflight", "link").

#include <QSortFilterProxyModel>
#include <QStringList>

namespace ringmaster::gui {

class HistoryProxy : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  explicit HistoryProxy(QObject* parent = nullptr);

  void setFilterWords(const QString& text);
  const QStringList& filterWords() const { return words_; }
  // Only runs whose state is one of `states` (empty: every state).
  void setStateFilter(const QStringList& states);
  // Archived runs are left out unless shown (HistoryModel::kArchivedRole).
  void setShowArchived(bool show);
  bool showsArchived() const { return show_archived_; }
  // Whether a filter word names the preflight link tests, which are listed only then.
  bool showsLinkTests() const;

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;
  bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

 private:
  QStringList words_;
  QStringList states_;
  bool show_archived_ = false;
};

}  // namespace ringmaster::gui

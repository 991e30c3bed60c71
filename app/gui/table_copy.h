#pragma once
// Ctrl+C in a table of the app copies the selected rows as tab-separated text with a header line
// (a list: its selected lines),
// numbers at full precision (a model's kCopyRole where it gives one, else what is shown), in the
// order the view shows them, so that they paste into a spreadsheet as they are. Qt's default
// copied the current cell alone.

#include <QAbstractItemView>
#include <QString>

namespace ringmaster::gui {

inline constexpr int kCopyRole = Qt::UserRole + 40;

// The rows with a selected cell, as described above; empty when nothing is selected.
QString selectedRowsAsTsv(const QAbstractItemView& view);
// Ctrl+C (QKeySequence::Copy) on `view` puts selectedRowsAsTsv() on the clipboard.
void installTableCopy(QAbstractItemView* view);

}  // namespace ringmaster::gui

#pragma once
// Room between a table's columns: a right-aligned number and the left-aligned text of the next
// column sat flush ("Best loss" against "Job id" in the History). Qt's style sheet padding on
// ::item did not reach the text of right-aligned cells here, and headers take none: the view's
// cells and its header's labels are drawn inside these margins instead.

#include <QTableView>

namespace ringmaster::gui {

inline constexpr int kCellPaddingLeft = 6;
inline constexpr int kCellPaddingRight = 14;

void padTableColumns(QTableView* table);

}  // namespace ringmaster::gui

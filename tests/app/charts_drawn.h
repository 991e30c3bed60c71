#pragma once
// Before a screenshot of charts with many points: the lines drawn off the GUI thread
// (ChartLinesItem) are back in them.

#include "charts/chart_lines_item.h"
#include "qt_wait.h"

namespace ringmaster::gui {

inline bool chartsDrawn(int timeout_ms = 10000) {
  QApplication::processEvents();  // what is posted (a redraw's drawing) first
  return waitFor([] { return ChartLinesItem::drawingsInFlight() == 0; }, timeout_ms);
}

}  // namespace ringmaster::gui

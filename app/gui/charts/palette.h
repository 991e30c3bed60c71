#pragma once
// Colours for chart lines and the chart theme, both readable on the app's dark Fusion palette.

#include <QColor>
#include <QPalette>

class QChart;

namespace ringmaster::gui {

// A colour per line: 32 clearly distinct ones (16 hues, each bright and pale, neighbours in
// index far apart in hue), then the same walk shifted by half a hue step, and so on. All are
// light enough to read on a dark background. index < 0 counts as 0.
QColor seriesColor(int index);

// Themes a chart and every axis it has from the palette: background (Window), plot area (Base),
// title and labels (WindowText / Text), grid lines (Text faded towards Base). Qt Charts' own
// themes stay white inside a dark window, so call this again after adding axes.
void applyChartTheme(QChart* chart, const QPalette& palette);

}  // namespace ringmaster::gui

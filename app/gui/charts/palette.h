#pragma once
// Colours for chart lines and the chart theme, readable on the app's dark and light palettes.

#include <QColor>
#include <QPalette>

class QChart;

namespace ringmaster::gui {

// A colour per line (a rank keeps its index everywhere: lines, the rank table's swatch, the rank
// list). The first eight are Okabe and Ito's colour-blind-safe palette; the next 32 are each at
// least a clear step (CIE76 10) from every one before (16 hues, bright and pale, neighbours in
// index far apart in hue, then shifted by half a hue step); past 40 that walk goes on unchecked.
// Each is light enough to read on a dark plot, or dark enough for a light one. index < 0 counts
// as 0.
QColor seriesColor(int index, bool dark);
// For the app's palette now (dark without an application).
QColor seriesColor(int index);

// Themes a chart and every axis it has from the palette: background (Window), plot area (Base),
// title and labels (WindowText / Text), grid lines (Text faded towards Base). Qt Charts' own
// themes stay white inside a dark window, so call this again after adding axes.
void applyChartTheme(QChart* chart, const QPalette& palette);

}  // namespace ringmaster::gui

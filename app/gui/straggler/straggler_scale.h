#pragma once
// The heatmap's colour scale and number formats. The scale is diverging on log2(ratio): 1x is a
// neutral dark cell, faster ranks turn cooler down to full blue at 0.5x, slower ranks warm through
// amber to bright red at 2x and beyond, so noise of a few percent stays nearly neutral and a
// real straggler glows.

#include <QColor>
#include <QPalette>
#include <QString>

namespace ringmaster::gui {

inline constexpr double kStragglerFullScale = 2.0;  // ratio at which a cell is fully red

// An invalid QColor for NaN (the cell is left empty).
QColor stragglerColor(double ratio, const QPalette& palette);
// "850 µs", "42 ms", "1.24 s".
QString formatStepTime(double seconds);
// "1.8x"; "1.04x" near 1 where one decimal would hide the difference.
QString formatRatio(double ratio);

}  // namespace ringmaster::gui

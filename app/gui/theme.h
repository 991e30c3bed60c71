#pragma once
// The app's look: the Fusion style with a dark palette, easier on the eyes at 3 a.m.; the charts
// and the heatmap take their colours from it.

#include <QApplication>

namespace ringmaster::gui {

void applyDarkTheme(QApplication& app);

}  // namespace ringmaster::gui

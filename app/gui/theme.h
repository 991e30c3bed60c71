#pragma once
// The app's look: the Fusion style with a dark or a light palette. It follows the desktop (GNOME's
// color-scheme, GTK_THEME's ":dark", or the palette the desktop's Qt theme gives), unless the user
// chose one (View > Appearance, kept in QSettings; RINGMASTER_THEME=dark|light for one run). With
// no desktop to ask (a bare X server, Xvfb) it is dark, easier on the eyes at 3 a.m. The charts,
// the heatmap and the tables take their colours from the palette.

#include <QApplication>
#include <QPalette>
#include <QString>

namespace ringmaster::gui {

enum class Theme { kDark, kLight };

// "auto" (follow the desktop), "dark" or "light": what View > Appearance saved.
QString savedThemeChoice();
void saveThemeChoice(const QString& choice);
// The theme to use now: RINGMASTER_THEME, else the saved choice, else the desktop's.
Theme preferredTheme();
// The desktop's light or dark preference, as far as it can be told (dark when it cannot).
Theme desktopTheme();

void applyTheme(QApplication& app, Theme theme);
inline void applyDarkTheme(QApplication& app) { applyTheme(app, Theme::kDark); }

// Whether a palette is dark (its base colour is): for colours chosen per theme.
bool isDark(const QPalette& palette);

}  // namespace ringmaster::gui

#include "theme.h"

#include <QProcess>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>
#include <optional>

namespace ringmaster::gui {
namespace {

constexpr char kThemeKey[] = "appearance/theme";

// Both start from Fusion's own palette, for the roles not set here (Mid, Light, Shadow...).
QPalette darkPalette(QPalette p) {
  p.setColor(QPalette::Window, QColor(0x23, 0x26, 0x2b));
  p.setColor(QPalette::WindowText, QColor(0xe6, 0xe6, 0xe6));
  p.setColor(QPalette::Base, QColor(0x1a, 0x1c, 0x20));
  p.setColor(QPalette::AlternateBase, QColor(0x26, 0x29, 0x2f));
  p.setColor(QPalette::ToolTipBase, QColor(0x30, 0x33, 0x3a));
  p.setColor(QPalette::ToolTipText, QColor(0xf0, 0xf0, 0xf0));
  p.setColor(QPalette::Text, QColor(0xe6, 0xe6, 0xe6));
  p.setColor(QPalette::Button, QColor(0x30, 0x33, 0x3a));
  p.setColor(QPalette::ButtonText, QColor(0xe6, 0xe6, 0xe6));
  p.setColor(QPalette::BrightText, QColor(0xff, 0x60, 0x60));
  p.setColor(QPalette::Link, QColor(0x5a, 0xa9, 0xff));
  p.setColor(QPalette::Highlight, QColor(0x2f, 0x6f, 0xc0));
  p.setColor(QPalette::HighlightedText, QColor(0xff, 0xff, 0xff));
  p.setColor(QPalette::PlaceholderText, QColor(0x90, 0x90, 0x90));
  p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x80, 0x80, 0x80));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x80, 0x80, 0x80));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x80, 0x80, 0x80));
  return p;
}

QPalette lightPalette(QPalette p) {
  p.setColor(QPalette::Window, QColor(0xf3, 0xf4, 0xf6));
  p.setColor(QPalette::WindowText, QColor(0x1f, 0x23, 0x28));
  p.setColor(QPalette::Base, QColor(0xff, 0xff, 0xff));
  p.setColor(QPalette::AlternateBase, QColor(0xf0, 0xf2, 0xf5));
  p.setColor(QPalette::ToolTipBase, QColor(0xff, 0xff, 0xf4));
  p.setColor(QPalette::ToolTipText, QColor(0x1f, 0x23, 0x28));
  p.setColor(QPalette::Text, QColor(0x1f, 0x23, 0x28));
  p.setColor(QPalette::Button, QColor(0xe8, 0xea, 0xee));
  p.setColor(QPalette::ButtonText, QColor(0x1f, 0x23, 0x28));
  p.setColor(QPalette::BrightText, QColor(0xc0, 0x1c, 0x1c));
  p.setColor(QPalette::Link, QColor(0x15, 0x5f, 0xc0));
  p.setColor(QPalette::Highlight, QColor(0x2f, 0x6f, 0xc0));
  p.setColor(QPalette::HighlightedText, QColor(0xff, 0xff, 0xff));
  p.setColor(QPalette::PlaceholderText, QColor(0x70, 0x74, 0x7a));
  p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x9a, 0x9a, 0x9a));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x9a, 0x9a, 0x9a));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x9a, 0x9a, 0x9a));
  return p;
}

std::optional<Theme> themeNamed(const QString& name) {
  if (name == "dark") return Theme::kDark;
  if (name == "light") return Theme::kLight;
  return std::nullopt;
}

}  // namespace

QString savedThemeChoice() {
  const QString choice = QSettings().value(kThemeKey, "auto").toString();
  return themeNamed(choice) ? choice : QStringLiteral("auto");
}

void saveThemeChoice(const QString& choice) { QSettings().setValue(kThemeKey, choice); }

// What the desktop's Qt theme gave the app, kept from the first call: preferredTheme() makes it
// before applyTheme() replaces the palette.
const QPalette& desktopPalette() {
  static const QPalette palette = QApplication::palette();
  return palette;
}

Theme desktopTheme() {
  // GTK themes name their dark variant "Adwaita:dark".
  if (qEnvironmentVariable("GTK_THEME").endsWith(":dark")) return Theme::kDark;
  const QString desktop = qEnvironmentVariable("XDG_CURRENT_DESKTOP");
  if (desktop.contains("GNOME", Qt::CaseInsensitive)) {
    // GNOME 42+ keeps the choice of its Appearance panel here; Qt 6.4 does not read it.
    QProcess gsettings;
    gsettings.start("gsettings", {"get", "org.gnome.desktop.interface", "color-scheme"});
    if (gsettings.waitForFinished(1000) && gsettings.exitCode() == 0) {
      return gsettings.readAllStandardOutput().contains("dark") ? Theme::kDark : Theme::kLight;
    }
  }
  // Other desktops (KDE, Xfce through their Qt platform themes) hand Qt their palette.
  if (!desktop.isEmpty()) return isDark(desktopPalette()) ? Theme::kDark : Theme::kLight;
  return Theme::kDark;
}

Theme preferredTheme() {
  desktopPalette();
  if (auto forced = themeNamed(qEnvironmentVariable("RINGMASTER_THEME"))) return *forced;
  if (auto chosen = themeNamed(savedThemeChoice())) return *chosen;
  return desktopTheme();
}

void applyTheme(QApplication& app, Theme theme) {
  app.setStyle(QStyleFactory::create("Fusion"));
  const QPalette fusion = app.style()->standardPalette();
  app.setPalette(theme == Theme::kDark ? darkPalette(fusion) : lightPalette(fusion));
}

bool isDark(const QPalette& palette) { return palette.color(QPalette::Base).lightness() < 128; }

}  // namespace ringmaster::gui

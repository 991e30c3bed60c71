#include "theme.h"

#include <QDir>
#include <QProcess>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>
#include <QWidget>
#include <optional>

#include "app_style.h"

namespace ringmaster::gui {
namespace {

constexpr char kThemeKey[] = "appearance/theme";

// The two palettes, role by role: {group, role, dark, light}. Both start from Fusion's own
// palette, for the roles not set here (Mid, Light, Shadow...).
struct RoleColours {
  QPalette::ColorGroup group;
  QPalette::ColorRole role;
  QRgb dark, light;
};
constexpr RoleColours kRoles[] = {
    {QPalette::All, QPalette::Window, 0x23262b, 0xf3f4f6},
    {QPalette::All, QPalette::WindowText, 0xe6e6e6, 0x1f2328},
    {QPalette::All, QPalette::Base, 0x1a1c20, 0xffffff},
    {QPalette::All, QPalette::AlternateBase, 0x26292f, 0xf0f2f5},
    {QPalette::All, QPalette::ToolTipBase, 0x30333a, 0xfffff4},
    {QPalette::All, QPalette::ToolTipText, 0xf0f0f0, 0x1f2328},
    {QPalette::All, QPalette::Text, 0xe6e6e6, 0x1f2328},
    {QPalette::All, QPalette::Button, 0x30333a, 0xe8eaee},
    {QPalette::All, QPalette::ButtonText, 0xe6e6e6, 0x1f2328},
    {QPalette::All, QPalette::BrightText, 0xff6060, 0xc01c1c},
    {QPalette::All, QPalette::Link, 0x5aa9ff, 0x155fc0},
    {QPalette::All, QPalette::Highlight, 0x2f6fc0, 0x2f6fc0},
    {QPalette::All, QPalette::HighlightedText, 0xffffff, 0xffffff},
    {QPalette::All, QPalette::PlaceholderText, 0x909090, 0x70747a},
    {QPalette::Disabled, QPalette::Text, 0x808080, 0x9a9a9a},
    {QPalette::Disabled, QPalette::ButtonText, 0x808080, 0x9a9a9a},
    {QPalette::Disabled, QPalette::WindowText, 0x808080, 0x9a9a9a},
};

QPalette themePalette(QPalette p, Theme theme) {
  for (const RoleColours& r : kRoles) {
    p.setColor(r.group, r.role, QColor(theme == Theme::kDark ? r.dark : r.light));
  }
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

namespace {

Theme themeOfName(const QString& gtk_theme_name) {
  return gtk_theme_name.contains("dark", Qt::CaseInsensitive) ? Theme::kDark : Theme::kLight;
}

// GTK 3's settings file, for a bare X session: gtk-application-prefer-dark-theme, then
// gtk-theme-name ("Adwaita-dark"). Nothing when it says neither.
std::optional<Theme> gtkSettingsTheme() {
  const QString config = qEnvironmentVariable("XDG_CONFIG_HOME", QDir::homePath() + "/.config");
  QSettings ini(config + "/gtk-3.0/settings.ini", QSettings::IniFormat);
  if (ini.value("Settings/gtk-application-prefer-dark-theme").toString() == "1") {
    return Theme::kDark;
  }
  const QString name = ini.value("Settings/gtk-theme-name").toString();
  if (name.isEmpty()) return std::nullopt;
  return themeOfName(name);
}

}  // namespace

Theme desktopTheme() {
  // GTK_THEME names the theme and its variant: "Adwaita:dark", "Adwaita-dark", "Adwaita".
  if (const QString gtk = qEnvironmentVariable("GTK_THEME"); !gtk.isEmpty()) {
    return themeOfName(gtk);
  }
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
  if (auto gtk = gtkSettingsTheme()) return *gtk;
  return Theme::kDark;
}

Theme preferredTheme() {
  desktopPalette();
  if (auto forced = themeNamed(qEnvironmentVariable("RINGMASTER_THEME"))) return *forced;
  if (auto chosen = themeNamed(savedThemeChoice())) return *chosen;
  return desktopTheme();
}

void applyTheme(QApplication& app, Theme theme) {
  app.setStyle(new AppStyle);  // Fusion, with a visible keyboard focus and desktops' sort arrows
  const QPalette fusion = app.style()->standardPalette();
  app.setPalette(themePalette(fusion, theme));
  // A widget with a style sheet of its own (the History table's padding) keeps the palette it
  // was polished with: set its sheet again so that it takes the new one.
  for (QWidget* widget : QApplication::allWidgets()) {
    const QString sheet = widget->styleSheet();
    if (sheet.isEmpty()) continue;
    widget->setStyleSheet(QString());
    widget->setStyleSheet(sheet);
  }
}

bool isDark(const QPalette& palette) { return palette.color(QPalette::Base).lightness() < 128; }

}  // namespace ringmaster::gui

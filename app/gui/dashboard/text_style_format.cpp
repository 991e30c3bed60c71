#include "dashboard/text_style_format.h"

#include <array>

#include "theme.h"

namespace ringmaster::gui {
namespace {

// 0-7 normal, 8-15 bright: VS Code's terminal colours, black and white moved off the background.
constexpr std::array<QRgb, 16> kDarkColours = {
    0xff6e7681, 0xfff14c4c, 0xff23d18b, 0xffe5e510, 0xff3b8eea, 0xffd670d6, 0xff29b8db, 0xffcccccc,
    0xff8b949e, 0xffff6b6b, 0xff3ee6a0, 0xfff5f543, 0xff6cb6ff, 0xffe98ae9, 0xff56d4f0, 0xffffffff};
constexpr std::array<QRgb, 16> kLightColours = {
    0xff000000, 0xffcd3131, 0xff107c10, 0xff949800, 0xff0451a5, 0xffbc05bc, 0xff0598bc, 0xff555555,
    0xff666666, 0xffe51400, 0xff14ce14, 0xffb5ba00, 0xff0a5fd6, 0xffd20fd2, 0xff0aa5c7, 0xff777777};

QColor indexedColour(uint32_t index, bool dark) {
  if (index < 16) return QColor::fromRgb((dark ? kDarkColours : kLightColours)[index]);
  if (index < 232) {  // the 6x6x6 cube
    const auto level = [](uint32_t v) { return v == 0 ? 0 : 55 + 40 * static_cast<int>(v); };
    const uint32_t cube = index - 16;
    return QColor(level(cube / 36), level(cube / 6 % 6), level(cube % 6));
  }
  const int grey = 8 + 10 * static_cast<int>(index - 232);
  return QColor(grey, grey, grey);
}

}  // namespace

QColor ansiColour(uint32_t colour, bool dark) {
  const uint32_t value = colour & 0xffffff;
  if ((colour & ~0xffffffu) == TextStyle::kRgb) return QColor::fromRgb(0xff000000 | value);
  return indexedColour(value & 0xff, dark);
}

QTextCharFormat charFormat(const TextStyle& style, const QPalette& palette) {
  QTextCharFormat format;
  if (style.isDefault()) return format;
  const bool dark = isDark(palette);
  QColor fg = style.fg ? ansiColour(style.fg, dark) : palette.color(QPalette::Text);
  QColor bg = style.bg ? ansiColour(style.bg, dark) : palette.color(QPalette::Base);
  if (style.flags & TextStyle::kInverse) std::swap(fg, bg);
  if (style.flags & TextStyle::kDim) {  // halfway to the background
    fg = QColor((fg.red() + bg.red()) / 2, (fg.green() + bg.green()) / 2,
                (fg.blue() + bg.blue()) / 2);
  }
  if (style.fg || style.flags & (TextStyle::kInverse | TextStyle::kDim)) format.setForeground(fg);
  if (style.bg || style.flags & TextStyle::kInverse) format.setBackground(bg);
  if (style.flags & TextStyle::kBold) format.setFontWeight(QFont::Bold);
  if (style.flags & TextStyle::kItalic) format.setFontItalic(true);
  if (style.flags & TextStyle::kUnderline) format.setFontUnderline(true);
  return format;
}

}  // namespace ringmaster::gui

#include "straggler/straggler_scale.h"

#include <algorithm>
#include <cmath>

namespace ringmaster::gui {

namespace {

QColor mix(const QColor& a, const QColor& b, double t) {
  t = std::clamp(t, 0.0, 1.0);
  return QColor::fromRgbF(static_cast<float>(a.redF() + (b.redF() - a.redF()) * t),
                          static_cast<float>(a.greenF() + (b.greenF() - a.greenF()) * t),
                          static_cast<float>(a.blueF() + (b.blueF() - a.blueF()) * t));
}

}  // namespace

QColor stragglerColor(double ratio, const QPalette& palette) {
  if (!std::isfinite(ratio) || ratio < 0) return {};
  const bool dark = palette.color(QPalette::Base).lightness() < 128;
  const QColor neutral = dark ? QColor(0x3c, 0x42, 0x4a) : QColor(0xe4, 0xe4, 0xe4);
  const QColor cool = dark ? QColor(0x2f, 0x80, 0xd0) : QColor(0x3d, 0x85, 0xd6);
  const QColor amber = dark ? QColor(0xe3, 0x9b, 0x2a) : QColor(0xf0, 0xa0, 0x30);
  const QColor red = dark ? QColor(0xff, 0x2b, 0x2b) : QColor(0xdc, 0x10, 0x10);
  // t in [-1, 1]: -1 at 0.5x, 0 at 1x, +1 at 2x.
  const double t =
      ratio <= 0 ? -1.0 : std::clamp(std::log2(ratio) / std::log2(kStragglerFullScale), -1.0, 1.0);
  if (t < 0) return mix(neutral, cool, -t);
  if (t < 0.5) return mix(neutral, amber, t / 0.5);
  return mix(amber, red, (t - 0.5) / 0.5);
}

QString formatStepTime(double seconds) {
  if (!std::isfinite(seconds)) return QStringLiteral("\u2014");
  const double a = std::fabs(seconds);
  if (a < 1e-3) return QStringLiteral("%1 \u00b5s").arg(seconds * 1e6, 0, 'f', 0);
  if (a < 0.1) return QStringLiteral("%1 ms").arg(seconds * 1e3, 0, 'f', a < 0.01 ? 1 : 0);
  if (a < 1) return QStringLiteral("%1 ms").arg(seconds * 1e3, 0, 'f', 0);
  return QStringLiteral("%1 s").arg(seconds, 0, 'f', a < 10 ? 2 : 1);
}

QString formatRatio(double ratio) {
  if (!std::isfinite(ratio)) return QStringLiteral("\u2014");
  const int decimals = std::fabs(ratio - 1.0) < 0.1 ? 2 : 1;
  return QStringLiteral("%1x").arg(ratio, 0, 'f', decimals);
}

}  // namespace ringmaster::gui

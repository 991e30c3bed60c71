#include "cluster/format.h"

#include <QDateTime>
#include <cmath>

namespace ringmaster::gui {
namespace {

QString scaled(double value, double base, const char* const* units, int unit_count,
               const char* suffix) {
  int unit = 0;
  while (std::abs(value) >= base && unit + 1 < unit_count) {
    value /= base;
    ++unit;
  }
  // Three significant digits at most: 1.23, 12.3, 123.
  const int decimals = unit == 0 || std::abs(value) >= 100 ? 0 : std::abs(value) >= 10 ? 1 : 2;
  return QString::number(value, 'f', decimals) + " " + units[unit] + suffix;
}

}  // namespace

QString formatBytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  return scaled(bytes, 1024, kUnits, 6, "");
}

QString formatRate(double bytes_per_s) {
  static const char* const kUnits[] = {"B", "kB", "MB", "GB", "TB"};
  return scaled(bytes_per_s, 1000, kUnits, 5, "/s");
}

QString formatUptime(double seconds) {
  const auto s = static_cast<long long>(std::max(0.0, seconds));
  if (s < 60) return QString("%1 s").arg(s);
  if (s < 3600) return QString("%1 min").arg(s / 60);
  if (s < 86400) return QString("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
  return QString("%1 d %2 h").arg(s / 86400).arg((s % 86400) / 3600);
}

QString formatPercent(double percent) { return QString::number(percent, 'f', 0) + " %"; }

QString formatClock(double unix_seconds) {
  if (unix_seconds <= 0) return QString::fromUtf8("—");
  return QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(unix_seconds * 1000))
      .toString("yyyy-MM-dd HH:mm");
}

}  // namespace ringmaster::gui

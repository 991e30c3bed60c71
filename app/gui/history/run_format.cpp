#include "history/run_format.h"

#include <QDateTime>
#include <cmath>

namespace ringmaster::gui {

namespace {
const QString kNone = QStringLiteral("\u2014");

QString twoDigits(qint64 v) { return QStringLiteral("%1").arg(v, 2, 10, QLatin1Char('0')); }
}  // namespace

QString formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return kNone;
  const qint64 s = static_cast<qint64>(std::floor(seconds));
  const qint64 days = s / 86400, hours = (s / 3600) % 24, minutes = (s / 60) % 60, secs = s % 60;
  if (days > 0) return QStringLiteral("%1d %2h").arg(days).arg(twoDigits(hours));
  if (s >= 3600) return QStringLiteral("%1h %2m").arg(s / 3600).arg(twoDigits(minutes));
  if (s >= 60) return QStringLiteral("%1m %2s").arg(s / 60).arg(twoDigits(secs));
  // A short run in tenths (a digits job takes 0.3 s: "0s" said it took nothing).
  if (seconds < 10) return QStringLiteral("%1s").arg(std::floor(seconds * 10) / 10, 0, 'f', 1);
  return QStringLiteral("%1s").arg(secs);
}

QString formatLocalTime(double unix_seconds) {
  if (!std::isfinite(unix_seconds) || unix_seconds <= 0) return kNone;
  const auto ms = static_cast<qint64>(std::floor(unix_seconds * 1000.0));
  return QDateTime::fromMSecsSinceEpoch(ms).toLocalTime().toString(
      QStringLiteral("yyyy-MM-dd HH:mm:ss"));
}

QString formatFullTime(double unix_seconds) {
  if (!std::isfinite(unix_seconds) || unix_seconds <= 0) return kNone;
  const QDateTime at =
      QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(std::floor(unix_seconds * 1000.0)));
  return at.toString(QStringLiteral("yyyy-MM-dd HH:mm:ss.zzz ")) + at.timeZoneAbbreviation();
}

QString formatEventTime(double unix_seconds) {
  if (!std::isfinite(unix_seconds) || unix_seconds <= 0) return kNone;
  const QDateTime at =
      QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(std::floor(unix_seconds * 1000.0)));
  const bool today = at.date() == QDate::currentDate();
  return at.toString(today ? QStringLiteral("HH:mm:ss.zzz") : QStringLiteral("MM-dd HH:mm:ss.zzz"));
}

QString formatLoss(double loss) {
  if (std::isnan(loss)) return kNone;
  return QString::number(loss, 'g', 4);
}

QColor stateColor(const QString& state, const QPalette& palette) {
  const bool dark = palette.color(QPalette::Base).lightness() < 128;
  if (state == QLatin1String("running"))
    return dark ? QColor(0x6c, 0xb4, 0xff) : QColor(0x15, 0x5f, 0xc0);
  if (state == QLatin1String("succeeded"))
    return dark ? QColor(0x5f, 0xd3, 0x7a) : QColor(0x1e, 0x80, 0x3c);
  if (state == QLatin1String("failed"))
    return dark ? QColor(0xff, 0x6b, 0x6b) : QColor(0xc0, 0x1c, 0x1c);
  if (state == QLatin1String("unknown"))  // its agents are silent: neither good nor bad
    return dark ? QColor(0xc0, 0x80, 0xff) : QColor(0x7a, 0x3d, 0xb8);
  if (state == QLatin1String("submitted") || state == QLatin1String("starting") ||
      state == QLatin1String("restarting") || state == QLatin1String("waiting") ||
      state == QLatin1String("stopping"))
    return dark ? QColor(0xf2, 0xc1, 0x4e) : QColor(0x9a, 0x6a, 0x00);
  // stopped, and any state a newer build may add
  return dark ? QColor(0xa8, 0xa8, 0xa8) : QColor(0x60, 0x60, 0x60);
}

}  // namespace ringmaster::gui

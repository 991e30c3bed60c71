#pragma once
// How the History view writes times, durations, states and losses: one place, so the table, its
// tooltips and the tests agree.

#include <QColor>
#include <QPalette>
#include <QString>

namespace ringmaster::gui {

// "45s", "3m 12s", "1h 02m", "2d 03h"; "—" for NaN or negative input.
QString formatDuration(double seconds);
// Local time "2026-11-23 14:05:31"; "—" for 0 (never set) or NaN.
QString formatLocalTime(double unix_seconds);
// The same with milliseconds and the zone, "2026-11-23 14:05:31.042 CET": a tooltip's full time.
QString formatFullTime(double unix_seconds);
// An event's time in a list: "14:05:31.042" today, "11-22 14:05:31.042" before.
QString formatEventTime(double unix_seconds);
// Four significant digits ("0.2315", "1.204e-05"); "—" for NaN.
QString formatLoss(double loss);

// The colour of a job state, readable on `palette`'s base (lighter tints on a dark base, deeper
// ones on a light base): running blue, succeeded green, failed red, stopped grey, submitted amber,
// unknown (its agents are silent) purple.
QColor stateColor(const QString& state, const QPalette& palette);

}  // namespace ringmaster::gui

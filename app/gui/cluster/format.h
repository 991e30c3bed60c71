#pragma once
// Numbers as a person reads them in the cluster view: binary units for memory, decimal for
// network rates (as ifconfig and nvidia-smi print them).

#include <QString>

namespace ringmaster::gui {

QString formatBytes(double bytes);         // "512 MiB", "79.6 GiB"
QString formatRate(double bytes_per_s);    // "0 B/s", "12.4 MB/s"
QString formatUptime(double seconds);      // "42 s", "5 min", "3 h 12 min", "4 d 2 h"
QString formatPercent(double percent);     // "7 %", "87 %"
QString formatClock(double unix_seconds);  // "2024-05-01 14:03" local time; "—" for 0

}  // namespace ringmaster::gui

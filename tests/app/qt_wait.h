#pragma once
// For GUI tests against real processes: runs the Qt event loop until `done` or the timeout.

#include <unistd.h>

#include <QApplication>
#include <QElapsedTimer>
#include <functional>

namespace ringmaster::gui {

inline bool waitFor(const std::function<bool()>& done, int timeout_ms) {
  QElapsedTimer timer;
  timer.start();
  while (!done()) {
    if (timer.elapsed() > timeout_ms) return false;
    QApplication::processEvents(QEventLoop::AllEvents, 50);
    usleep(10000);
  }
  return true;
}

}  // namespace ringmaster::gui

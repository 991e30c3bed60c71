// gtest main for the GUI tests: a QApplication on the offscreen platform unless one was chosen
// (QT_QPA_PLATFORM=xcb under Xvfb shows the real windows), in the app's own theme so that tests
// and screenshots see what users see.
#include <gtest/gtest.h>

#include <QApplication>
#include <QStandardPaths>

#include "theme.h"

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  // QSettings (sizes, columns, smoothing the views keep) under ~/.qttest, never the user's.
  QStandardPaths::setTestModeEnabled(true);
  ringmaster::gui::applyDarkTheme(app);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

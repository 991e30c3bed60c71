// ringmaster: the desktop app. `ringmaster [--cluster FILE] [--db FILE] [--demo]`.
#include <QApplication>
#include <QCommandLineParser>
#include <QPalette>
#include <QStyleFactory>
#include <cstdio>
#include <cstdlib>

#include "main_window.h"

namespace {

// Without a display Qt would abort with a long message about platform plugins: say it in one
// line and point to what works instead.
bool hasDisplay() {
  for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) {
    const char* value = std::getenv(name);
    if (value && *value) return true;
  }
  return false;
}

// A dark Fusion palette: easier on the eyes at 3 a.m., and the charts are themed from it.
void applyDarkPalette(QApplication& app) {
  app.setStyle(QStyleFactory::create("Fusion"));
  QPalette p;
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
  app.setPalette(p);
}

}  // namespace

int main(int argc, char** argv) {
  if (!hasDisplay()) {
    std::fprintf(stderr,
                 "ringmaster: no display (DISPLAY is not set). Run it on a desktop, or under a "
                 "virtual one: xvfb-run -a %s --demo; or follow the demo in a terminal: "
                 "ringmasterctl demo\n",
                 argv[0]);
    return 1;
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName("ringmaster");
  QApplication::setOrganizationName("Ringmaster");
  QApplication::setApplicationVersion("0.1.0");
  applyDarkPalette(app);

  QCommandLineParser parser;
  parser.setApplicationDescription("Ringmaster: data-parallel training on your GPU hosts.");
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption cluster("cluster", "Cluster file (default: $RINGMASTER_CLUSTER or "
                                        "~/.config/ringmaster/cluster.yaml).", "FILE");
  QCommandLineOption db("db", "History database (default: $RINGMASTER_DB or "
                              "~/.local/share/ringmaster/history.db).", "FILE");
  QCommandLineOption demo("demo", "Start the local agent if needed, run the demo job and open "
                                  "its dashboard.");
  parser.addOptions({cluster, db, demo});
  parser.process(app);

  ringmaster::gui::AppOptions options;
  options.cluster_file = parser.value(cluster);
  options.db_file = parser.value(db);
  options.demo = parser.isSet(demo);
  ringmaster::gui::MainWindow window(options);
  window.show();
  if (!window.start()) return 1;
  return app.exec();
}

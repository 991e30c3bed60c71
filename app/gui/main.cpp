// ringmaster: the desktop app. `ringmaster [--cluster FILE] [--db FILE] [--demo] [--demo-spec
// FILE]`.
#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <cstdio>
#include <cstdlib>

#include "main_window.h"
#include "theme.h"

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
  QApplication::setWindowIcon(
      QIcon(ringmaster::gui::defaultResourcesDir() + "/icons/ringmaster.png"));
  QApplication::setOrganizationName("Ringmaster");
  QApplication::setApplicationVersion("0.1.0");
  ringmaster::gui::applyTheme(app, ringmaster::gui::preferredTheme());

  QCommandLineParser parser;
  parser.setApplicationDescription("Ringmaster: data-parallel training on your GPU hosts.");
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption cluster("cluster",
                             "Cluster file (default: $RINGMASTER_CLUSTER or "
                             "~/.config/ringmaster/cluster.yaml).",
                             "FILE");
  QCommandLineOption db("db",
                        "History database (default: $RINGMASTER_DB or "
                        "~/.local/share/ringmaster/history.db).",
                        "FILE");
  QCommandLineOption demo("demo",
                          "Start the local agent if needed, run the demo job and open "
                          "its dashboard.");
  QCommandLineOption demo_spec("demo-spec",
                               "The job --demo runs (default: the bundled jobs/demo.yaml, "
                               "Fashion-MNIST on 2 ranks for under a minute).",
                               "FILE");
  parser.addOptions({cluster, db, demo, demo_spec});
  parser.process(app);

  ringmaster::gui::AppOptions options;
  options.cluster_file = parser.value(cluster);
  options.db_file = parser.value(db);
  options.demo = parser.isSet(demo) || parser.isSet(demo_spec);
  options.demo_spec = parser.value(demo_spec);
  ringmaster::gui::MainWindow window(options);
  window.show();
  if (!window.start()) return 1;
  return app.exec();
}

// The dashboard's failure line (issue 22): a 1,900-character cause pinned the window's minimum
// width at 1,342 px. The button shows what fits, with "…", and keeps the whole text. And the
// controls' hint (issue 35): the longest of its versions that fits, or nothing, never cut.
#include "dashboard/eliding_button.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QHBoxLayout>
#include <QImage>
#include <QLineEdit>
#include <QWidget>

#include "dashboard/eliding_label.h"
#include "dashboard/fitting_label.h"

namespace ringmaster::gui {
namespace {

TEST(ElidingButton, ALongMessageNeverWidensItsWindow) {
  QWidget window;
  auto* layout = new QHBoxLayout(&window);
  auto* button = new ElidingButton;
  layout->addWidget(button);
  QString cause = "rank 3 on gpu02 failed: ";
  while (cause.size() < 1900) cause += "RuntimeError: CUDA error: an illegal memory access ";
  cause += "\nTraceback (most recent call last): ...";
  button->setFullText(cause);
  EXPECT_LT(window.minimumSizeHint().width(), 300);
  window.resize(1000, 80);
  window.show();
  QApplication::processEvents();
  EXPECT_LE(window.width(), 1000);
  EXPECT_EQ(button->fullText(), cause);
  EXPECT_TRUE(button->text().startsWith("rank 3 on gpu02 failed: RuntimeError"));
  EXPECT_TRUE(button->text().endsWith(QChar(0x2026))) << button->text().toStdString();
  EXPECT_FALSE(button->text().contains('\n'));
  EXPECT_LE(button->fontMetrics().horizontalAdvance(button->text()), button->width());

  // Short text is shown whole.
  button->setFullText("agent a1 not answering since 14:02:11");
  QApplication::processEvents();
  EXPECT_EQ(button->text(), "agent a1 not answering since 14:02:11");
}

// Issue 61: a whole-log search's status took the window from 1280 to 1559 px. A status line's
// text, however long, never sets its window's minimum width; it shows what fits, with "…".
TEST(ElidingLabel, ALongStatusNeverWidensItsWindow) {
  QWidget window;
  auto* layout = new QHBoxLayout(&window);
  auto* field = new QLineEdit;
  auto* label = new ElidingLabel;
  layout->addWidget(field, 1);
  layout->addWidget(label);
  label->setText("match 1 of 13");
  const int narrowest = window.minimumSizeHint().width();
  QString status = "match 1 of 13; 13 matches in the whole log (205 MB)";
  while (status.size() < 3000)
    status += " · showing 8 MB around the match; tick Follow for the end";
  label->setText(status);
  EXPECT_EQ(window.minimumSizeHint().width(), narrowest);
  window.resize(1000, 60);
  window.show();
  QApplication::processEvents();
  EXPECT_LE(window.width(), 1000);
  EXPECT_EQ(label->text(), status);  // the whole text stays, for the tooltip and for tests
  EXPECT_TRUE(label->isElided());
  EXPECT_LE(label->width(), label->fontMetrics().averageCharWidth() * 60);
  EXPECT_GE(field->width(), 1000 / 2);  // the query keeps its room beside the status
  // What is painted is the text cut with "…" to the label's width.
  const QImage painted = label->grab().toImage();
  EXPECT_FALSE(painted.isNull());
  label->setText("match 2 of 13");
  QApplication::processEvents();
  EXPECT_FALSE(label->isElided());
  EXPECT_EQ(window.minimumSizeHint().width(), narrowest);
}

TEST(FittingLabel, ShowsTheLongestVersionThatFitsOrNothing) {
  QWidget window;
  auto* layout = new QHBoxLayout(&window);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* label = new FittingLabel({"Drag: zoom · right-drag: pan · double-click: reset",
                                  "drag: zoom · double-click: reset", "drag: zoom"});
  layout->addWidget(label);
  EXPECT_EQ(window.minimumSizeHint().width(), 0);
  const QFontMetrics metrics = label->fontMetrics();
  window.show();
  for (int width : {1000, metrics.horizontalAdvance("drag: zoom · double-click: reset") + 2,
                    metrics.horizontalAdvance("drag: zoom") + 2, 10}) {
    window.resize(width, 40);
    QApplication::processEvents();
    const QString shown = label->text();
    EXPECT_LE(metrics.horizontalAdvance(shown), label->width()) << width;
    if (width == 1000) {
      EXPECT_EQ(shown, "Drag: zoom · right-drag: pan · double-click: reset");
    }
    if (width == 10) {
      EXPECT_EQ(shown, "");
    }
    if (width != 1000 && width != 10) {
      EXPECT_FALSE(shown.isEmpty()) << width;
    }
  }
}

}  // namespace
}  // namespace ringmaster::gui

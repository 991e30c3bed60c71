// The dashboard's failure line (issue 22): a 1,900-character cause pinned the window's minimum
// width at 1,342 px. The button shows what fits, with "…", and keeps the whole text.
#include "dashboard/eliding_button.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QHBoxLayout>
#include <QWidget>

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

}  // namespace
}  // namespace ringmaster::gui

// The window's banner (issue 61): it floats over the content's corner instead of pushing the
// content down under the pointer, and a job's outcome is announced once, not again after a
// relaunch nor for a run that ended before the app started.
#include "banner.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QCoreApplication>
#include <QPushButton>
#include <QSettings>
#include <QStandardPaths>
#include <QTableWidget>
#include <QVBoxLayout>

#include "outcome_news.h"

namespace ringmaster::gui {
namespace {

TEST(Banner, FloatsOverTheCornerAndMovesNothing) {
  QWidget window;
  auto* layout = new QVBoxLayout(&window);
  auto* top = new QPushButton("a control at the top");
  auto* table = new QTableWidget(20, 4);
  layout->addWidget(top);
  layout->addWidget(table, 1);
  auto* banner = new Banner(&window);
  window.resize(1000, 600);
  window.show();
  QApplication::processEvents();
  const QRect top_before = top->geometry(), table_before = table->geometry();

  bool opened = false;
  QString long_text;
  while (long_text.size() < 400) long_text += "rank 3 on gpu02 failed: CUDA error ";
  banner->announce("train-1 failed", long_text, true, [&] { opened = true; });
  QApplication::processEvents();
  EXPECT_TRUE(banner->isVisible());
  EXPECT_TRUE(banner->text().contains("train-1 failed")) << banner->text().toStdString();
  EXPECT_EQ(top->geometry(), top_before);
  EXPECT_EQ(table->geometry(), table_before);
  // In the bottom-right corner, whole, the text wrapped rather than cut or widening anything.
  const QRect inside = window.rect().adjusted(Banner::kMarginPx, Banner::kMarginPx,
                                              -Banner::kMarginPx, -Banner::kMarginPx);
  EXPECT_TRUE(inside.contains(banner->geometry())) << banner->geometry().width();
  EXPECT_EQ(banner->geometry().right(), inside.right());
  EXPECT_EQ(banner->geometry().bottom(), inside.bottom());
  EXPECT_LE(banner->width(), Banner::kMaxWidthPx);
  EXPECT_GE(banner->height(), banner->minimumSizeHint().height());
  EXPECT_LE(window.width(), 1000);

  // It follows the window's size, and a second banner moves nothing either.
  window.resize(700, 500);
  QApplication::processEvents();
  const QRect smaller = window.rect().adjusted(Banner::kMarginPx, Banner::kMarginPx,
                                               -Banner::kMarginPx, -Banner::kMarginPx);
  EXPECT_TRUE(smaller.contains(banner->geometry()));
  EXPECT_EQ(banner->geometry().bottom(), smaller.bottom());
  const QRect top_now = top->geometry();
  banner->announce("train-2 succeeded", "job-2", false, {});
  QApplication::processEvents();
  EXPECT_EQ(top->geometry(), top_now);

  banner->announce("train-1 failed", "again", true, [&] { opened = true; });
  banner->findChild<QPushButton*>("bannerOpen")->click();
  EXPECT_TRUE(opened);
  EXPECT_FALSE(banner->isVisible());
  EXPECT_EQ(banner->text(), "");
}

class OutcomeNewsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    QStandardPaths::setTestModeEnabled(true);  // QSettings under ~/.qttest, not the user's
    QCoreApplication::setOrganizationName(QStringLiteral("ringmaster-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("banner_test"));
    QSettings().remove(OutcomeNews::kAnnouncedKey);
  }
};

TEST_F(OutcomeNewsTest, AnOutcomeIsNewsOnceAndNotAgainAfterARelaunch) {
  {
    OutcomeNews news(1000);
    EXPECT_TRUE(news.take("twinB", 1010));
    EXPECT_FALSE(news.take("twinB", 1010));  // its dashboard says it again
    EXPECT_TRUE(news.take("unknown-end", 0));
  }
  OutcomeNews relaunched(2000);
  // Told before the relaunch: the restored dashboard's "stopped" is old news.
  EXPECT_FALSE(relaunched.take("twinB", 1010));
  // Ended long before this app started (a past run opened from the History): not news.
  EXPECT_FALSE(relaunched.take("flood8", 1500));
  // Ended while this app runs, or just as it started: news, once.
  EXPECT_TRUE(relaunched.take("new-run", 2100));
  EXPECT_FALSE(relaunched.take("new-run", 2100));
  EXPECT_TRUE(relaunched.take("just-before", 2000 - OutcomeNews::kStartSlackSeconds + 1));
}

TEST_F(OutcomeNewsTest, KeepsOnlyTheNewestOutcomes) {
  OutcomeNews news(1000);
  for (int i = 0; i < OutcomeNews::kMaxKept + 10; ++i) {
    EXPECT_TRUE(news.take(QString("job-%1").arg(i), 1001));
  }
  EXPECT_EQ(QSettings().value(OutcomeNews::kAnnouncedKey).toStringList().size(),
            OutcomeNews::kMaxKept);
  EXPECT_FALSE(news.take(QString("job-%1").arg(OutcomeNews::kMaxKept + 9), 1001));
}

}  // namespace
}  // namespace ringmaster::gui

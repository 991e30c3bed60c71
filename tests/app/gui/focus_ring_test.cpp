// The app's style draws a focus ring a person can see after Tab. (Qt itself clears the window's
// keyboard-focus flag on a real mouse press, which a synthetic event here cannot be.)
#include <gtest/gtest.h>

#include <QApplication>
#include <QHBoxLayout>
#include <QImage>
#include <QKeyEvent>
#include <QLineEdit>
#include <QPushButton>

namespace ringmaster::gui {
namespace {

void pressTab(QWidget* focused) {
  QKeyEvent tab(QEvent::KeyPress, Qt::Key_Tab, Qt::NoModifier);
  QApplication::sendEvent(focused, &tab);
}

// Pixels of the highlight colour (within a little anti-aliasing) in `widget`'s image.
int highlightPixels(QWidget* widget) {
  QApplication::processEvents();
  const QImage image = widget->grab().toImage();
  const QColor ring = widget->palette().color(QPalette::Highlight);
  int count = 0;
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) {
      const QColor c = image.pixelColor(x, y);
      count += std::abs(c.red() - ring.red()) + std::abs(c.green() - ring.green()) +
                           std::abs(c.blue() - ring.blue()) <
                       40
                   ? 1
                   : 0;
    }
  }
  return count;
}

TEST(FocusRing, TabShowsARingAroundTheFocusedButtonAndField) {
  QWidget window;
  auto* layout = new QHBoxLayout(&window);
  auto* first = new QPushButton("Add agent…");
  auto* second = new QPushButton("Remove");
  auto* field = new QLineEdit("gpu01");
  layout->addWidget(first);
  layout->addWidget(second);
  layout->addWidget(field);
  window.resize(420, 60);
  window.show();
  QApplication::setActiveWindow(&window);  // focus is drawn in the active window only
  QApplication::processEvents();
  first->setFocus(Qt::OtherFocusReason);
  const int none = highlightPixels(second);

  pressTab(first);
  ASSERT_TRUE(second->hasFocus());
  // The ring goes round the button: more than its width's worth of pixels.
  EXPECT_GT(highlightPixels(second) - none, second->width());

  pressTab(second);
  ASSERT_TRUE(field->hasFocus());
  EXPECT_LE(highlightPixels(second), none + 2);  // gone from the button
  EXPECT_GT(highlightPixels(field), field->width());
}

}  // namespace
}  // namespace ringmaster::gui

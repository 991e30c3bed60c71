#include "app_style.h"

#include <QPainter>
#include <QStyleFactory>
#include <QStyleOption>
#include <QTabBar>
#include <algorithm>

namespace ringmaster::gui {
namespace {

bool keyboardFocused(const QStyleOption* option) {
  const QStyle::State wanted =
      QStyle::State_HasFocus | QStyle::State_KeyboardFocusChange | QStyle::State_Enabled;
  return (option->state & wanted) == wanted;
}

void drawRing(const QStyleOption* option, QPainter* painter) {
  painter->save();
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setBrush(Qt::NoBrush);
  painter->setPen(QPen(option->palette.color(QPalette::Highlight), 2));
  painter->drawRoundedRect(QRectF(option->rect).adjusted(1, 1, -1, -1), 3, 3);
  painter->restore();
}

// Fusion's colours for a tab widget's frame (qfusionstyle_p_p.h: buttonColor, tabFrameColor,
// outline, innerContrastLine), the translucent ones made opaque over what they are drawn on.
QColor tabFrameColor(const QPalette& palette) {
  QColor button = palette.button().color();
  button = button.lighter(100 + std::max(1, (180 - qGray(button.rgb())) / 6));
  button.setHsv(button.hue(), button.saturation() * 3 / 4, button.value());
  return button.lighter(104);
}

QColor over(const QColor& below, const QColor& color, int alpha) {
  const auto mix = [&](int b, int c) { return b + (c - b) * alpha / 255; };
  return QColor(mix(below.red(), color.red()), mix(below.green(), color.green()),
                mix(below.blue(), color.blue()));
}

void fillOutline(QPainter* painter, const QRect& r, const QColor& color) {
  painter->fillRect(QRect(r.left(), r.top(), r.width(), 1), color);
  painter->fillRect(QRect(r.left(), r.bottom(), r.width(), 1), color);
  painter->fillRect(QRect(r.left(), r.top(), 1, r.height()), color);
  painter->fillRect(QRect(r.right(), r.top(), 1, r.height()), color);
}

// As Fusion's PE_FrameTabWidget: the pane, a shadow line along the bottom (not for tabs at the
// bottom), the outline and a faint inner highlight. (Fusion strokes its outlines with
// drawRect(rect.adjusted(0, 0, -1, -1)), which covers the whole rect: so do these fills.)
void drawTabFrame(const QStyleOption* option, QPainter* painter) {
  const QColor pane = tabFrameColor(option->palette);
  const QColor window = option->palette.window().color();
  painter->fillRect(option->rect.adjusted(0, 0, -1, -1), pane);
  const auto* frame = qstyleoption_cast<const QStyleOptionTabWidgetFrame*>(option);
  if (frame == nullptr) return;
  QRect outline = option->rect;
  if (frame->shape != QTabBar::RoundedSouth) {
    outline.adjust(0, 0, 0, -1);
    painter->fillRect(QRect(outline.left(), outline.bottom() + 1, outline.width(), 1),
                      over(window, Qt::black, 15));
  }
  fillOutline(painter, outline, window.darker(140));
  fillOutline(painter, outline.adjusted(1, 1, -1, -1), over(pane, Qt::white, 30));
}

}  // namespace

AppStyle::AppStyle() : QProxyStyle(QStyleFactory::create("Fusion")) {}

void AppStyle::drawPrimitive(PrimitiveElement element, const QStyleOption* option,
                             QPainter* painter, const QWidget* widget) const {
  if (element == PE_FrameTabWidget) {
    drawTabFrame(option, painter);
    return;
  }
  // Item views draw the current cell's focus with PE_FrameFocusRect: the ring replaces it.
  if (element == PE_FrameFocusRect) {
    if (option->state & State_KeyboardFocusChange) drawRing(option, painter);  // Fusion's rule
    return;
  }
  if (element == PE_IndicatorHeaderArrow) {
    if (const auto* header = qstyleoption_cast<const QStyleOptionHeader*>(option)) {
      QStyleOptionHeader flipped = *header;
      if (header->sortIndicator == QStyleOptionHeader::SortUp) {
        flipped.sortIndicator = QStyleOptionHeader::SortDown;
      } else if (header->sortIndicator == QStyleOptionHeader::SortDown) {
        flipped.sortIndicator = QStyleOptionHeader::SortUp;
      }
      QProxyStyle::drawPrimitive(element, &flipped, painter, widget);
      return;
    }
  }
  QProxyStyle::drawPrimitive(element, option, painter, widget);
  const bool framed = element == PE_PanelButtonCommand || element == PE_PanelButtonTool ||
                      element == PE_FrameLineEdit || element == PE_IndicatorCheckBox ||
                      element == PE_IndicatorRadioButton;
  if (framed && keyboardFocused(option)) drawRing(option, painter);
}

void AppStyle::drawComplexControl(ComplexControl control, const QStyleOptionComplex* option,
                                  QPainter* painter, const QWidget* widget) const {
  QProxyStyle::drawComplexControl(control, option, painter, widget);
  const bool framed = control == CC_ComboBox || control == CC_SpinBox || control == CC_Slider ||
                      control == CC_ToolButton;
  if (framed && keyboardFocused(option)) drawRing(option, painter);
}

}  // namespace ringmaster::gui

#include "app_style.h"

#include <QPainter>
#include <QStyleFactory>
#include <QStyleOption>

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

}  // namespace

AppStyle::AppStyle() : QProxyStyle(QStyleFactory::create("Fusion")) {}

void AppStyle::drawPrimitive(PrimitiveElement element, const QStyleOption* option,
                             QPainter* painter, const QWidget* widget) const {
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

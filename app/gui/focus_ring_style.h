#pragma once
// Fusion with a focus ring a person can see: after Tab (or any keyboard move of the focus) the
// focused button, field, box, slider or table cell gets a 2 px outline in the highlight colour.
// Fusion's own cue is a one-pixel tint that vanishes on a dark palette. A mouse click moves the
// focus without a ring, as desktops do.

#include <QProxyStyle>

namespace ringmaster::gui {

class FocusRingStyle : public QProxyStyle {
 public:
  FocusRingStyle();  // over Fusion

  void drawPrimitive(PrimitiveElement element, const QStyleOption* option, QPainter* painter,
                     const QWidget* widget = nullptr) const override;
  void drawComplexControl(ComplexControl control, const QStyleOptionComplex* option,
                          QPainter* painter, const QWidget* widget = nullptr) const override;
};

}  // namespace ringmaster::gui

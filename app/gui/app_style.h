#pragma once
// Fusion as the app draws it, for every widget:
// - a focus ring a person can see: after Tab (or any keyboard move of the focus) the focused
//   button, field, box, slider or table cell gets a 2 px outline in the highlight colour.
//   Fusion's own cue is a one-pixel tint that vanishes on a dark palette. A mouse click moves
//   the focus without a ring, as desktops do.
// - sort arrows that point as on Windows, macOS and GNOME: up for ascending, down for
//   descending. Qt's header asks for the opposite (the History, newest first, showed an up
//   arrow).

#include <QProxyStyle>

namespace ringmaster::gui {

class AppStyle : public QProxyStyle {
 public:
  AppStyle();  // over Fusion

  void drawPrimitive(PrimitiveElement element, const QStyleOption* option, QPainter* painter,
                     const QWidget* widget = nullptr) const override;
  void drawComplexControl(ComplexControl control, const QStyleOptionComplex* option,
                          QPainter* painter, const QWidget* widget = nullptr) const override;
};

}  // namespace ringmaster::gui

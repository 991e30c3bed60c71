#pragma once
// Fusion as the app draws it, for every widget:
// - a focus ring a person can see: after Tab (or any keyboard move of the focus) the focused
//   button, field, box, slider or table cell gets a 2 px outline in the highlight colour.
//   Fusion's own cue is a one-pixel tint that vanishes on a dark palette. A mouse click moves
//   the focus without a ring, as desktops do.
// - sort arrows that point as on Windows, macOS and GNOME: up for ascending, down for
//   descending. Qt's header asks for the opposite (the History, newest first, showed an up
//   arrow).
// - a tab widget's frame (around every tab: the whole window below the tab bar) in opaque fills,
//   looking as Fusion's. Fusion strokes it with pens, one of them translucent, and Qt 6.4's
//   raster engine hands a shape of 96 or more scan lines to its GUI thread pool and waits for it:
//   with ranks busy on every core, a 1400x1000 frame's repaint waited 25-40 ms for pool threads
//   to get a core while painting took 10 (bench_gui_stall, opening a dashboard). Filled
//   rectangles of one opaque colour are written straight to the window: no pool, 0.24 ms.

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

#include "theme.h"

#include <QPalette>
#include <QStyleFactory>

namespace ringmaster::gui {

void applyDarkTheme(QApplication& app) {
  app.setStyle(QStyleFactory::create("Fusion"));
  QPalette p;
  p.setColor(QPalette::Window, QColor(0x23, 0x26, 0x2b));
  p.setColor(QPalette::WindowText, QColor(0xe6, 0xe6, 0xe6));
  p.setColor(QPalette::Base, QColor(0x1a, 0x1c, 0x20));
  p.setColor(QPalette::AlternateBase, QColor(0x26, 0x29, 0x2f));
  p.setColor(QPalette::ToolTipBase, QColor(0x30, 0x33, 0x3a));
  p.setColor(QPalette::ToolTipText, QColor(0xf0, 0xf0, 0xf0));
  p.setColor(QPalette::Text, QColor(0xe6, 0xe6, 0xe6));
  p.setColor(QPalette::Button, QColor(0x30, 0x33, 0x3a));
  p.setColor(QPalette::ButtonText, QColor(0xe6, 0xe6, 0xe6));
  p.setColor(QPalette::BrightText, QColor(0xff, 0x60, 0x60));
  p.setColor(QPalette::Link, QColor(0x5a, 0xa9, 0xff));
  p.setColor(QPalette::Highlight, QColor(0x2f, 0x6f, 0xc0));
  p.setColor(QPalette::HighlightedText, QColor(0xff, 0xff, 0xff));
  p.setColor(QPalette::PlaceholderText, QColor(0x90, 0x90, 0x90));
  p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x80, 0x80, 0x80));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x80, 0x80, 0x80));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x80, 0x80, 0x80));
  app.setPalette(p);
}

}  // namespace ringmaster::gui

#pragma once
// How a terminal style (TerminalText's TextStyle) is drawn in a Qt text document: the 16 ANSI
// colours chosen to stay readable on the app's dark or light palette (black is a grey on dark,
// white a grey on light), xterm's 256-colour cube and greys, 24-bit colours as given.

#include <QColor>
#include <QPalette>
#include <QTextCharFormat>

#include "dashboard/terminal_text.h"

namespace ringmaster::gui {

// The colour of an SGR colour value (not 0: the default has no colour of its own).
QColor ansiColour(uint32_t colour, bool dark);
// The format of text in `style` shown on `palette`.
QTextCharFormat charFormat(const TextStyle& style, const QPalette& palette);

}  // namespace ringmaster::gui

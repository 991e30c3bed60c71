#pragma once
// Icons of one colour for item views: a line's swatch, a state's dot. ColorIcons makes each once.
// An item view's QColor decoration, or a QIcon made afresh at each paint, is a new entry of Qt's
// pixmap cache every time: with an 8-rank job live, the rank table and the agents' table filled
// its 10 MB in a minute.

#include <QColor>
#include <QHash>
#include <QIcon>

namespace ringmaster::gui {

QIcon dotIcon(const QColor& color);  // a filled circle, as a state column draws it

// Not thread-safe: a model keeps one, on the GUI thread.
class ColorIcons {
 public:
  const QIcon& swatch(const QColor& color) const;  // a filled square (a line's colour)
  const QIcon& dot(const QColor& color) const;     // dotIcon

 private:
  mutable QHash<QRgb, QIcon> swatches_, dots_;
};

}  // namespace ringmaster::gui

#include "banner.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <algorithm>

#include "theme.h"

namespace ringmaster::gui {

Banner::Banner(QWidget* over) : QFrame(over), text_(new QLabel) {
  setObjectName("banner");
  setVisible(false);
  setAutoFillBackground(true);
  setFrameShape(QFrame::StyledPanel);
  text_->setTextFormat(Qt::RichText);
  text_->setWordWrap(true);  // a long message wraps rather than widening the window
  auto* open = new QPushButton("Open");
  open->setObjectName("bannerOpen");
  auto* dismiss = new QPushButton("Dismiss");
  dismiss->setObjectName("bannerDismiss");
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(10, 6, 10, 6);
  layout->addWidget(text_, 1);
  layout->addWidget(open, 0, Qt::AlignVCenter);
  layout->addWidget(dismiss, 0, Qt::AlignVCenter);
  connect(dismiss, &QPushButton::clicked, this, &QWidget::hide);
  connect(open, &QPushButton::clicked, this, &Banner::openNews);
  over->installEventFilter(this);
}

void Banner::announce(const QString& title, const QString& text, bool failure,
                      std::function<void()> open) {
  open_ = std::move(open);
  QPalette palette = this->palette();
  const bool dark = isDark(parentWidget()->palette());
  palette.setColor(QPalette::Window,
                   failure ? (dark ? QColor(0x5a, 0x1d, 0x1d) : QColor(0xfb, 0xdc, 0xdc))
                           : (dark ? QColor(0x1d, 0x4a, 0x2a) : QColor(0xd8, 0xf0, 0xdd)));
  setPalette(palette);
  text_->setText(QString("<b>%1</b> &nbsp; %2").arg(title.toHtmlEscaped(), text.toHtmlEscaped()));
  show();
  place();
  raise();
}

QString Banner::text() const { return isVisible() ? text_->text() : QString(); }

void Banner::openNews() {
  if (open_) open_();
  hide();
}

bool Banner::eventFilter(QObject* watched, QEvent* event) {
  if (watched == parentWidget() && event->type() == QEvent::Resize && isVisible()) place();
  return QFrame::eventFilter(watched, event);
}

void Banner::place() {
  const QRect area = parentWidget()->rect().adjusted(kMarginPx, kMarginPx, -kMarginPx, -kMarginPx);
  const int width = std::min(kMaxWidthPx, area.width());
  const int height =
      std::min(hasHeightForWidth() ? heightForWidth(width) : sizeHint().height(), area.height());
  setGeometry(area.right() + 1 - width, area.bottom() + 1 - height, width, height);
}

}  // namespace ringmaster::gui

#include "editor/yaml_text_edit.h"

#include <QFontDatabase>
#include <QKeyEvent>
#include <QPainter>
#include <QScrollBar>
#include <QTextBlock>

namespace ringmaster::gui {
namespace {

class LineNumberArea : public QWidget {
 public:
  explicit LineNumberArea(YamlTextEdit* editor) : QWidget(editor), editor_(editor) {}
  QSize sizeHint() const override { return {editor_->lineNumberAreaWidth(), 0}; }

 protected:
  void paintEvent(QPaintEvent* event) override { editor_->paintLineNumbers(event); }

 private:
  YamlTextEdit* editor_;
};

QColor mix(const QColor& a, const QColor& b, double t) {
  return QColor::fromRgbF(a.redF() * (1 - t) + b.redF() * t, a.greenF() * (1 - t) + b.greenF() * t,
                          a.blueF() * (1 - t) + b.blueF() * t);
}

}  // namespace

YamlTextEdit::YamlTextEdit(QWidget* parent)
    : QPlainTextEdit(parent), line_numbers_(new LineNumberArea(this)) {
  QFont font = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  font.setPointSizeF(std::max(font.pointSizeF(), 10.0));
  setFont(font);
  setLineWrapMode(QPlainTextEdit::NoWrap);
  setTabChangesFocus(false);
  connect(this, &QPlainTextEdit::blockCountChanged, this,
          [this] { setViewportMargins(lineNumberAreaWidth(), 0, 0, 0); });
  connect(this, &QPlainTextEdit::updateRequest, this, [this](const QRect& rect, int dy) {
    if (dy != 0) {
      line_numbers_->scroll(0, dy);
    } else {
      line_numbers_->update(0, rect.y(), line_numbers_->width(), rect.height());
    }
  });
  connect(this, &QPlainTextEdit::cursorPositionChanged, this, &YamlTextEdit::updateHighlights);
  setViewportMargins(lineNumberAreaWidth(), 0, 0, 0);
  updateHighlights();
}

int YamlTextEdit::lineNumberAreaWidth() const {
  int digits = 1;
  for (int n = std::max(1, blockCount()); n >= 10; n /= 10) ++digits;
  digits = std::max(digits, 3);
  return 12 + fontMetrics().horizontalAdvance(QLatin1Char('9')) * digits;
}

void YamlTextEdit::paintLineNumbers(QPaintEvent* event) {
  QPainter painter(line_numbers_);
  const QPalette& pal = palette();
  painter.fillRect(event->rect(), mix(pal.color(QPalette::Base), pal.color(QPalette::Window), 0.6));
  QTextBlock block = firstVisibleBlock();
  int top = qRound(blockBoundingGeometry(block).translated(contentOffset()).top());
  const int height = fontMetrics().height();
  while (block.isValid() && top <= event->rect().bottom()) {
    if (block.isVisible()) {
      const int line = block.blockNumber() + 1;
      const bool problem = problem_lines_.contains(line);
      painter.setPen(problem ? QColor(0xff, 0x5f, 0x56)
                             : pal.color(QPalette::Disabled, QPalette::Text));
      QFont font = this->font();
      font.setBold(problem);
      painter.setFont(font);
      painter.drawText(0, top, line_numbers_->width() - 6, height, Qt::AlignRight,
                       QString::number(line));
    }
    block = block.next();
    top += qRound(blockBoundingRect(block.previous()).height());
  }
}

void YamlTextEdit::resizeEvent(QResizeEvent* event) {
  QPlainTextEdit::resizeEvent(event);
  const QRect area = contentsRect();
  line_numbers_->setGeometry(area.left(), area.top(), lineNumberAreaWidth(), area.height());
}

void YamlTextEdit::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Tab && event->modifiers() == Qt::NoModifier) {
    insertPlainText(QStringLiteral("  "));
    return;
  }
  QPlainTextEdit::keyPressEvent(event);
}

void YamlTextEdit::replaceText(const QString& text) {
  if (text == toPlainText()) return;
  const int line = textCursor().blockNumber();
  const int scroll = verticalScrollBar()->value();
  QTextCursor cursor(document());
  cursor.beginEditBlock();
  cursor.select(QTextCursor::Document);
  cursor.insertText(text);
  cursor.endEditBlock();
  QTextCursor keep(document()->findBlockByNumber(std::min(line, blockCount() - 1)));
  setTextCursor(keep);
  verticalScrollBar()->setValue(scroll);
}

void YamlTextEdit::setProblemLines(const QSet<int>& lines) {
  problem_lines_ = lines;
  updateHighlights();
  line_numbers_->update();
}

void YamlTextEdit::goToLine(int line) {
  const QTextBlock block = document()->findBlockByNumber(std::max(0, line - 1));
  if (!block.isValid()) return;
  // The cursor goes to the line's first character, without a selection that would hide the
  // line's red tint.
  QTextCursor cursor(block);
  const QString text = block.text();
  int indent = 0;
  while (indent < text.size() && text.at(indent).isSpace()) ++indent;
  cursor.movePosition(QTextCursor::Right, QTextCursor::MoveAnchor, indent);
  setTextCursor(cursor);
  centerCursor();
}

void YamlTextEdit::updateHighlights() {
  QList<QTextEdit::ExtraSelection> selections;
  const QColor base = palette().color(QPalette::Base);
  QTextEdit::ExtraSelection current;
  current.format.setBackground(mix(base, palette().color(QPalette::Highlight), 0.12));
  current.format.setProperty(QTextFormat::FullWidthSelection, true);
  current.cursor = textCursor();
  current.cursor.clearSelection();
  selections.append(current);
  for (int line : problem_lines_) {
    const QTextBlock block = document()->findBlockByNumber(line - 1);
    if (!block.isValid()) continue;
    QTextEdit::ExtraSelection problem;
    problem.format.setBackground(mix(base, QColor(0xff, 0x3b, 0x30), 0.25));
    problem.format.setProperty(QTextFormat::FullWidthSelection, true);
    problem.cursor = QTextCursor(block);
    selections.append(problem);
  }
  setExtraSelections(selections);
}

}  // namespace ringmaster::gui

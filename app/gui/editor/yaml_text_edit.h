#pragma once
// The YAML tab's editor: monospace, line numbers (the problems list speaks in lines), lines with
// a problem tinted red, Tab inserting spaces (YAML forbids tabs for indentation).

#include <QPlainTextEdit>
#include <QSet>

namespace ringmaster::gui {

class YamlTextEdit : public QPlainTextEdit {
  Q_OBJECT
 public:
  explicit YamlTextEdit(QWidget* parent = nullptr);

  // Replaces the whole text as one undoable edit (the form's rewrites can be undone here too),
  // keeping the cursor's line and the scroll position.
  void replaceText(const QString& text);
  void setProblemLines(const QSet<int>& lines);  // 1-based
  void goToLine(int line);                       // 1-based; the cursor goes to its text

  int lineNumberAreaWidth() const;
  void paintLineNumbers(QPaintEvent* event);

 protected:
  void resizeEvent(QResizeEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

 private:
  void updateHighlights();

  QWidget* line_numbers_;
  QSet<int> problem_lines_;
};

}  // namespace ringmaster::gui

#pragma once
// The configs of runs side by side: one row per spec key (flattened: "world_size", "train.lr",
// "env.FOO"), one column per run, the rows whose values differ tinted and the values that differ
// from the first run's in bold, as W&B's run comparer does. "Only differences" (on at first)
// leaves out the rows every run agrees on. Ctrl+C copies the selected rows.

#include <QString>
#include <QStringList>
#include <QWidget>
#include <string>
#include <vector>

#include "history/spec_flatten.h"

class QCheckBox;
class QLabel;
class QTableWidget;

namespace ringmaster::gui {

// A run as the diff shows it: a column header, and the spec it was launched with.
struct RunSpec {
  QString label;          // "resnet-ddp · 7f3a"
  std::string spec_yaml;  // "" when the history has none (an older client's run)
};

class ConfigDiffView : public QWidget {
  Q_OBJECT
 public:
  explicit ConfigDiffView(std::vector<RunSpec> runs, QWidget* parent = nullptr);

  void setOnlyDifferences(bool only);
  // Keys of the rows shown, top to bottom (tests).
  QStringList shownKeys() const;
  // The rows, one per key of any run (shown or not).
  const std::vector<SpecDiffRow>& rows() const { return rows_; }
  QTableWidget* table() const { return table_; }
  QString summary() const;  // "2 of 9 keys differ", and which runs had no spec

 private:
  void fill();

  std::vector<RunSpec> runs_;  // those with a spec that parsed: the columns
  QStringList left_out_;       // those without, and why
  std::vector<SpecDiffRow> rows_;
  QCheckBox* only_differences_;
  QLabel* summary_;
  QTableWidget* table_;
};

}  // namespace ringmaster::gui

#pragma once
// A two-column table of name/value rows with Add and Remove buttons: the env variables and the
// metric patterns of a job. Rows left entirely empty are not part of the value.

#include <QString>
#include <QWidget>
#include <utility>
#include <vector>

class QTableWidget;

namespace ringmaster::gui {

class KeyValueTable : public QWidget {
  Q_OBJECT
 public:
  using Pairs = std::vector<std::pair<QString, QString>>;

  KeyValueTable(const QString& key_header, const QString& value_header, const QString& add_label,
                QWidget* parent = nullptr);

  void setPairs(const Pairs& pairs);  // does not emit edited()
  Pairs pairs() const;

  QTableWidget* table() const { return table_; }
  // Marks the row whose name is `key` (tinted, tooltip = message); false when there is none.
  bool markRow(const QString& key, const QString& message);
  void clearMarks();

 Q_SIGNALS:
  void edited();

 private:
  void fitHeight();

  QTableWidget* table_;
  bool filling_ = false;
};

}  // namespace ringmaster::gui

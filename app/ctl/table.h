#pragma once
// Plain aligned text tables for terminal output. Cells are shown terminal-safe (a rank's error
// text is a job's to write): see terminal_safe.h.

#include <string>
#include <vector>

namespace ringmaster::ctl {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row);
  std::string render() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string formatBytes(double bytes);
std::string formatTime(double unix_seconds);  // local "YYYY-MM-DD HH:MM:SS", "-" for 0
std::string formatDuration(double seconds);   // "1h02m", "3m05s", "4.2s"
std::string formatNumber(double value);       // shortest round-trip text (%.10g)

}  // namespace ringmaster::ctl

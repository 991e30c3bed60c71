#pragma once
// Plain aligned text tables for terminal output.

#include <string>
#include <vector>

namespace ringmaster::ctl {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string render() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string formatBytes(double bytes);
std::string formatTime(double unix_seconds);  // local "YYYY-MM-DD HH:MM:SS", "-" for 0
std::string formatDuration(double seconds);   // "1h02m", "3m05s", "4.2s"
std::string formatNumber(double value);       // shortest round-trip text (%.10g)

}  // namespace ringmaster::ctl

#pragma once
// TerminalText: a rank's raw output turned into the lines a terminal would have shown, for the
// log pane (Qt-free). ANSI escape sequences (colours, cursor moves, window titles) are dropped;
// a carriage return starts its line again, so a progress bar redrawn in place (tqdm, Keras) is
// one line in its last state rather than a line per update; "erase line" (ESC[K, ESC[2K) erases.
// Input may be cut anywhere: an escape sequence split between two chunks is finished by the next.
//
// Not thread-safe; one per shown log.

#include <string>
#include <string_view>
#include <vector>

namespace ringmaster::gui {

class TerminalText {
 public:
  // Takes the next bytes of the output; returns the lines they completed (without '\n').
  std::vector<std::string> feed(std::string_view bytes);
  // The line being written (after the last '\n'), as a terminal shows it now.
  const std::string& pending() const { return line_; }
  void clear() { *this = TerminalText(); }

 private:
  void put(char c);
  void endEscape(char final_byte);

  std::string line_;
  size_t column_ = 0;  // where the next character goes: after a '\r', the start of the line
  enum class Escape { kNone, kStart, kCsi, kOsc, kOscEscape } escape_ = Escape::kNone;
  std::string csi_params_;  // of the CSI sequence being read
};

}  // namespace ringmaster::gui

#pragma once
// TerminalText: a rank's raw output turned into the lines a terminal would have shown, for the
// log pane (Qt-free). SGR sequences (ESC[...m: 16, 256 and 24-bit colours, bold, dim, italic,
// underline, inverse) become style runs over each line's text; other escape sequences (cursor
// moves, window titles) are dropped. A carriage return starts its line again, so a progress bar
// redrawn in place (tqdm, Keras) is one line in its last state rather than a line per update;
// "erase line" (ESC[K, ESC[2K) erases. Input may be cut anywhere: an escape sequence split
// between two chunks is finished by the next.
//
// Not thread-safe; one per shown log.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringmaster::gui {

// How a character looks, as SGR set it. A colour is 0 (the terminal's default), kIndexed | n
// (n in 0-255: 0-7 normal, 8-15 bright, then xterm's cube and greys) or kRgb | 0xRRGGBB.
struct TextStyle {
  static constexpr uint32_t kIndexed = 1u << 24;
  static constexpr uint32_t kRgb = 2u << 24;
  enum Flag : uint8_t { kBold = 1, kDim = 2, kItalic = 4, kUnderline = 8, kInverse = 16 };

  uint32_t fg = 0;
  uint32_t bg = 0;
  uint8_t flags = 0;

  bool isDefault() const { return fg == 0 && bg == 0 && flags == 0; }
  bool operator==(const TextStyle&) const = default;
};

// Bytes [begin, begin + length) of a line's text drawn in `style`.
struct StyleRun {
  size_t begin = 0;
  size_t length = 0;
  TextStyle style;
  bool operator==(const StyleRun&) const = default;
};

struct TerminalLine {
  std::string text;
  std::vector<StyleRun> runs;  // only the styled parts; empty for a plain line
};

class TerminalText {
 public:
  // Takes the next bytes of the output; returns the lines they completed (without '\n').
  std::vector<TerminalLine> feed(std::string_view bytes);
  // The line being written (after the last '\n'), as a terminal shows it now.
  TerminalLine pending() const;
  void clear() { *this = TerminalText(); }

 private:
  void put(char c);
  void endEscape(char final_byte);
  void applySgr();
  TerminalLine takeLine();

  std::string line_;
  std::vector<TextStyle> styles_;  // one per byte of line_
  TextStyle style_;                // what the next character gets
  size_t column_ = 0;  // where the next character goes: after a '\r', the start of the line
  enum class Escape { kNone, kStart, kCsi, kOsc, kOscEscape } escape_ = Escape::kNone;
  std::string csi_params_;  // of the CSI sequence being read
};

}  // namespace ringmaster::gui

#include "dashboard/terminal_text.h"

#include <algorithm>

namespace ringmaster::gui {

std::vector<std::string> TerminalText::feed(std::string_view bytes) {
  std::vector<std::string> lines;
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    switch (escape_) {
      case Escape::kStart:  // after ESC
        escape_ = c == '[' ? Escape::kCsi : c == ']' ? Escape::kOsc : Escape::kNone;
        csi_params_.clear();
        continue;         // any other: a two-byte sequence (ESC 7, ESC =, ...), dropped
      case Escape::kCsi:  // parameters and intermediates, then a final byte 0x40-0x7e
        if (u >= 0x40 && u <= 0x7e) {
          endEscape(c);
        } else if (u >= 0x20 && u <= 0x3f) {
          csi_params_ += c;
        } else {
          escape_ = Escape::kNone;  // not a sequence after all
        }
        continue;
      case Escape::kOsc:  // a window title and the like, to BEL or ESC backslash
        if (c == '\a') escape_ = Escape::kNone;
        if (c == '\x1b') escape_ = Escape::kOscEscape;
        continue;
      case Escape::kOscEscape:
        escape_ = c == '\\' ? Escape::kNone : Escape::kOsc;
        continue;
      case Escape::kNone:
        break;
    }
    if (c == '\x1b') {
      escape_ = Escape::kStart;
    } else if (c == '\n') {
      lines.push_back(std::move(line_));
      line_.clear();
      column_ = 0;
    } else if (c == '\r') {
      column_ = 0;
    } else if (c == '\b') {
      if (column_ > 0) --column_;
    } else if (c == '\t' || u >= 0x20) {
      put(c);
    }  // other control characters are dropped
  }
  return lines;
}

void TerminalText::put(char c) {
  if (column_ < line_.size()) {
    line_[column_] = c;
  } else {
    line_ += c;
  }
  ++column_;
}

void TerminalText::endEscape(char final_byte) {
  escape_ = Escape::kNone;
  if (final_byte != 'K') return;  // colours and cursor moves: nothing to keep
  // Erase in line: 0 (default) from the cursor to the end, 1 to the start, 2 the whole line.
  if (csi_params_.empty() || csi_params_ == "0") {
    line_.resize(std::min(column_, line_.size()));
  } else if (csi_params_ == "1") {
    line_.replace(0, std::min(column_, line_.size()), std::min(column_, line_.size()), ' ');
  } else if (csi_params_ == "2") {
    line_.assign(std::min(column_, line_.size()), ' ');
  }
}

}  // namespace ringmaster::gui

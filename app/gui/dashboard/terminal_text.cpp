#include "dashboard/terminal_text.h"

#include <algorithm>
#include <charconv>

namespace ringmaster::gui {
namespace {

// The numbers of an SGR sequence ("1;38;5;208" -> 1 38 5 208; empty parts are 0, as terminals
// read them; ':' separates sub-parameters the same way).
std::vector<int> sgrParameters(std::string_view text) {
  std::vector<int> numbers;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of(";:", start);
    if (end == std::string_view::npos) end = text.size();
    int number = 0;
    std::from_chars(text.data() + start, text.data() + end, number);
    numbers.push_back(number);
    start = end + 1;
  }
  return numbers;
}

// 38/48's extended colour from numbers[*i + 1...]: "5;N" (256 colours) or "2;R;G;B".
// Advances *i past what it read; 0 (default) when malformed.
uint32_t extendedColour(const std::vector<int>& numbers, size_t* i) {
  const auto at = [&](size_t k) { return k < numbers.size() ? numbers[k] : -1; };
  if (at(*i + 1) == 5 && at(*i + 2) >= 0 && at(*i + 2) <= 255) {
    const auto index = static_cast<uint32_t>(at(*i + 2));
    *i += 2;
    return TextStyle::kIndexed | index;
  }
  if (at(*i + 1) == 2 && numbers.size() >= *i + 5) {
    const auto channel = [&](size_t k) { return static_cast<uint32_t>(std::clamp(at(k), 0, 255)); };
    const uint32_t rgb = channel(*i + 2) << 16 | channel(*i + 3) << 8 | channel(*i + 4);
    *i += 4;
    return TextStyle::kRgb | rgb;
  }
  *i = numbers.size();  // the rest cannot be read
  return 0;
}

}  // namespace

std::vector<TerminalLine> TerminalText::feed(std::string_view bytes) {
  std::vector<TerminalLine> lines;
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
        } else if (u >= 0x20 && u <= 0x3f && csi_params_.size() < 64) {
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
      lines.push_back(takeLine());
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

TerminalLine TerminalText::pending() const {
  TerminalLine line{line_, {}};
  for (size_t i = 0; i < styles_.size(); ++i) {
    if (styles_[i].isDefault()) continue;
    if (!line.runs.empty() && line.runs.back().begin + line.runs.back().length == i &&
        line.runs.back().style == styles_[i]) {
      ++line.runs.back().length;
    } else {
      line.runs.push_back({i, 1, styles_[i]});
    }
  }
  return line;
}

TerminalLine TerminalText::takeLine() {
  TerminalLine line = pending();
  line_.clear();
  styles_.clear();
  column_ = 0;
  return line;
}

void TerminalText::put(char c) {
  if (column_ < line_.size()) {
    line_[column_] = c;
    styles_[column_] = style_;
  } else {
    line_ += c;
    styles_.push_back(style_);
  }
  ++column_;
}

void TerminalText::endEscape(char final_byte) {
  escape_ = Escape::kNone;
  if (final_byte == 'm') return applySgr();
  if (final_byte != 'K') return;  // cursor moves and the rest: nothing to keep
  // Erase in line: 0 (default) from the cursor to the end, 1 to the start, 2 the whole line.
  const size_t cursor = std::min(column_, line_.size());
  if (csi_params_.empty() || csi_params_ == "0") {
    line_.resize(cursor);
    styles_.resize(cursor);
  } else if (csi_params_ == "1") {
    line_.replace(0, cursor, cursor, ' ');
    std::fill_n(styles_.begin(), cursor, TextStyle{});
  } else if (csi_params_ == "2") {
    line_.assign(cursor, ' ');
    styles_.assign(cursor, TextStyle{});
  }
}

void TerminalText::applySgr() {
  const std::vector<int> numbers = sgrParameters(csi_params_);
  for (size_t i = 0; i < numbers.size(); ++i) {
    const int n = numbers[i];
    if (n == 0) {
      style_ = TextStyle{};
    } else if (n == 1) {
      style_.flags |= TextStyle::kBold;
    } else if (n == 2) {
      style_.flags |= TextStyle::kDim;
    } else if (n == 3) {
      style_.flags |= TextStyle::kItalic;
    } else if (n == 4) {
      style_.flags |= TextStyle::kUnderline;
    } else if (n == 7) {
      style_.flags |= TextStyle::kInverse;
    } else if (n == 22) {
      style_.flags &= ~(TextStyle::kBold | TextStyle::kDim);
    } else if (n == 23) {
      style_.flags &= ~TextStyle::kItalic;
    } else if (n == 24) {
      style_.flags &= ~TextStyle::kUnderline;
    } else if (n == 27) {
      style_.flags &= ~TextStyle::kInverse;
    } else if (n >= 30 && n <= 37) {
      style_.fg = TextStyle::kIndexed | static_cast<uint32_t>(n - 30);
    } else if (n >= 90 && n <= 97) {
      style_.fg = TextStyle::kIndexed | static_cast<uint32_t>(n - 90 + 8);
    } else if (n >= 40 && n <= 47) {
      style_.bg = TextStyle::kIndexed | static_cast<uint32_t>(n - 40);
    } else if (n >= 100 && n <= 107) {
      style_.bg = TextStyle::kIndexed | static_cast<uint32_t>(n - 100 + 8);
    } else if (n == 38) {
      style_.fg = extendedColour(numbers, &i);
    } else if (n == 48) {
      style_.bg = extendedColour(numbers, &i);
    } else if (n == 39) {
      style_.fg = 0;
    } else if (n == 49) {
      style_.bg = 0;
    }  // blink, fonts, overline...: not shown
  }
}

}  // namespace ringmaster::gui

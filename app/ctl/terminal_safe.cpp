#include "terminal_safe.h"

#include <cstdio>

namespace ringmaster::ctl {
namespace {

void appendEscape(std::string* out, const char* format, unsigned value) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, format, value);
  *out += buffer;
}

// Bytes in a UTF-8 sequence that starts with `lead`; 0 when no sequence starts with it.
size_t sequenceLength(unsigned char lead) {
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

}  // namespace

std::string terminalSafe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c == '\t' || (c >= 0x20 && c < 0x7f)) {
        out += static_cast<char>(c);
      } else if (c == 0x1b) {
        out += "\\e";
      } else {
        appendEscape(&out, "\\x%02x", c);
      }
      continue;
    }
    const size_t length = sequenceLength(c);
    bool whole = length > 0 && i + length <= text.size();
    for (size_t k = 1; whole && k < length; ++k) {
      whole = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    }
    if (!whole) {
      // Not UTF-8: a stray byte (0x9b is a CSI of its own on an 8-bit terminal).
      appendEscape(&out, "\\x%02x", c);
    } else if (c == 0xc2 && static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      // U+0080-U+009F: the C1 controls, encoded.
      appendEscape(&out, "\\u%04x", static_cast<unsigned char>(text[i + 1]));
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length - 1;
    }
  }
  return out;
}

}  // namespace ringmaster::ctl

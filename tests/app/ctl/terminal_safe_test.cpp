// terminalSafe: what a job wrote reaches a terminal as text, never as control sequences.
#include "terminal_safe.h"

#include <gtest/gtest.h>

namespace ringmaster::ctl {
namespace {

TEST(TerminalSafe, EscapeSequencesReadAsText) {
  // Retitle the window, clear the screen, go up a line and print a fake verdict.
  EXPECT_EQ(terminalSafe("\x1b]0;pwned\x07\x1b[2J\x1b[1Aok: job succeeded"),
            "\\e]0;pwned\\x07\\e[2J\\e[1Aok: job succeeded");
  EXPECT_EQ(terminalSafe("a\rb\nc\x7f"), "a\\x0db\\x0ac\\x7f");
  EXPECT_EQ(terminalSafe("col1\tcol2"), "col1\tcol2");  // a tab moves nothing but the cursor
}

TEST(TerminalSafe, C1ControlsAreShownWhetherEncodedOrStray) {
  EXPECT_EQ(terminalSafe("\xc2\x9b"
                         "2J"),
            "\\u009b2J");  // U+009B, CSI on some terminals
  EXPECT_EQ(terminalSafe("\x9b"
                         "2J"),
            "\\x9b2J");                               // the raw byte, on 8-bit ones
  EXPECT_EQ(terminalSafe("\xe2\x80"), "\\xe2\\x80");  // a cut sequence is not UTF-8
}

TEST(TerminalSafe, Utf8TextIsKept) {
  const std::string text =
      "loss \xe2\x80\x9c"
      "0.25\xe2\x80\x9d caf\xc3\xa9 \xf0\x9f\x94\xa5";
  EXPECT_EQ(terminalSafe(text), text);
  EXPECT_EQ(terminalSafe(""), "");
}

}  // namespace
}  // namespace ringmaster::ctl

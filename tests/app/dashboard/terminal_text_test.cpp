// TerminalText: what a terminal would have shown of a rank's output, chunk by chunk.
#include "dashboard/terminal_text.h"

#include <gtest/gtest.h>

namespace ringmaster::gui {
namespace {

using Lines = std::vector<std::string>;

TEST(TerminalText, PlainLinesPassThroughAndTheLastIsPending) {
  TerminalText t;
  EXPECT_EQ(t.feed("first\nsecond\nthird, still being"), (Lines{"first", "second"}));
  EXPECT_EQ(t.pending(), "third, still being");
  EXPECT_EQ(t.feed(" written\n"), (Lines{"third, still being written"}));
  EXPECT_EQ(t.pending(), "");
}

TEST(TerminalText, AProgressBarRedrawnWithCarriageReturnsIsOneLineInItsLastState) {
  TerminalText t;
  EXPECT_TRUE(t.feed(" 10%|#         | 1/10\r 50%|#####     | 5/10").empty());
  EXPECT_EQ(t.pending(), " 50%|#####     | 5/10");
  EXPECT_EQ(t.feed("\r100%|##########| 10/10\nepoch 2\n"),
            (Lines{"100%|##########| 10/10", "epoch 2"}));
  // A shorter redraw leaves the rest of the old line, as a terminal does; CRLF ends lines.
  EXPECT_EQ(t.feed("abcdef\rXY\nwindows line\r\n"), (Lines{"XYcdef", "windows line"}));
}

TEST(TerminalText, ColourCodesAndWindowTitlesAreDroppedEvenWhenCutBetweenChunks) {
  TerminalText t;
  EXPECT_EQ(t.feed("\x1b[1;31mERROR\x1b[0m: bad batch\n"), (Lines{"ERROR: bad batch"}));
  EXPECT_TRUE(t.feed("\x1b[3").empty());
  EXPECT_EQ(t.feed("2mgreen\x1b"), Lines{});
  EXPECT_EQ(t.feed("[0m ok\n"), (Lines{"green ok"}));
  EXPECT_EQ(t.feed("\x1b]0;training 50%\x07visible\n"), (Lines{"visible"}));
  EXPECT_EQ(t.feed("\x1b]2;title\x1b\\after\n"), (Lines{"after"}));
  EXPECT_EQ(t.feed("bell\a and \x01"
                   "control\n"),
            (Lines{"bell and control"}));
}

TEST(TerminalText, EraseInLineErases) {
  TerminalText t;
  EXPECT_EQ(t.feed("a long status line\r\x1b[Kshort\n"), (Lines{"short"}));
  EXPECT_EQ(t.feed("something\r\x1b[2Kx\n"), (Lines{"x"}));
  EXPECT_EQ(t.feed("abcdef\rab\x1b[1K!\n"), (Lines{"  !def"}));
}

}  // namespace
}  // namespace ringmaster::gui

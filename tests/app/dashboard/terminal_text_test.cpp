// TerminalText: what a terminal would have shown of a rank's output, chunk by chunk.
#include "dashboard/terminal_text.h"

#include <gtest/gtest.h>

namespace ringmaster::gui {
namespace {

using Lines = std::vector<std::string>;

// The lines' texts, styles left out.
Lines texts(const std::vector<TerminalLine>& lines) {
  Lines out;
  for (const TerminalLine& line : lines) out.push_back(line.text);
  return out;
}

TextStyle fg(uint32_t colour, uint8_t flags = 0) { return {colour, 0, flags}; }
constexpr uint32_t kRed = TextStyle::kIndexed | 1;

TEST(TerminalText, PlainLinesPassThroughAndTheLastIsPending) {
  TerminalText t;
  EXPECT_EQ(texts(t.feed("first\nsecond\nthird, still being")), (Lines{"first", "second"}));
  EXPECT_EQ(t.pending().text, "third, still being");
  EXPECT_EQ(texts(t.feed(" written\n")), (Lines{"third, still being written"}));
  EXPECT_EQ(t.pending().text, "");
}

TEST(TerminalText, AProgressBarRedrawnWithCarriageReturnsIsOneLineInItsLastState) {
  TerminalText t;
  EXPECT_TRUE(t.feed(" 10%|#         | 1/10\r 50%|#####     | 5/10").empty());
  EXPECT_EQ(t.pending().text, " 50%|#####     | 5/10");
  EXPECT_EQ(texts(t.feed("\r100%|##########| 10/10\nepoch 2\n")),
            (Lines{"100%|##########| 10/10", "epoch 2"}));
  // A shorter redraw leaves the rest of the old line, as a terminal does; CRLF ends lines.
  EXPECT_EQ(texts(t.feed("abcdef\rXY\nwindows line\r\n")), (Lines{"XYcdef", "windows line"}));
}

TEST(TerminalText, EscapeSequencesAreNotTextEvenWhenCutBetweenChunks) {
  TerminalText t;
  EXPECT_EQ(texts(t.feed("\x1b[1;31mERROR\x1b[0m: bad batch\n")), (Lines{"ERROR: bad batch"}));
  EXPECT_TRUE(t.feed("\x1b[3").empty());
  EXPECT_EQ(texts(t.feed("2mgreen\x1b")), Lines{});
  EXPECT_EQ(texts(t.feed("[0m ok\n")), (Lines{"green ok"}));
  EXPECT_EQ(texts(t.feed("\x1b]0;training 50%\x07visible\n")), (Lines{"visible"}));
  EXPECT_EQ(texts(t.feed("\x1b]2;title\x1b\\after\n")), (Lines{"after"}));
  EXPECT_EQ(texts(t.feed("\x1b[2Aup two\x1b[5Cright\n")), (Lines{"up tworight"}));
  EXPECT_EQ(texts(t.feed("bell\a and \x01"
                         "control\n")),
            (Lines{"bell and control"}));
}

TEST(TerminalText, SgrColoursBecomeStyleRuns) {
  TerminalText t;
  const auto lines = t.feed("\x1b[1;31mERROR\x1b[0m: bad \x1b[4mbatch\x1b[24m\nplain\n");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].text, "ERROR: bad batch");
  EXPECT_EQ(lines[0].runs, (std::vector<StyleRun>{{0, 5, fg(kRed, TextStyle::kBold)},
                                                  {11, 5, fg(0, TextStyle::kUnderline)}}));
  EXPECT_TRUE(lines[1].runs.empty());
}

TEST(TerminalText, BrightIndexedTrueColourAndBackgroundsAreRead) {
  TerminalText t;
  const auto lines = t.feed(
      "\x1b[92ma\x1b[38;5;208mb\x1b[38;2;1;2;3mc\x1b[39;44md\x1b[48:5:17;7me\x1b[49;27m"
      "\x1b[38;5mf\x1b[mg\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].text, "abcdefg");
  const TextStyle blue_bg{0, TextStyle::kIndexed | 4, 0};
  const TextStyle inverse{0, TextStyle::kIndexed | 17, TextStyle::kInverse};
  EXPECT_EQ(lines[0].runs, (std::vector<StyleRun>{{0, 1, fg(TextStyle::kIndexed | 10)},
                                                  {1, 1, fg(TextStyle::kIndexed | 208)},
                                                  {2, 1, fg(TextStyle::kRgb | 0x010203)},
                                                  {3, 1, blue_bg},
                                                  {4, 1, inverse}}));
  // "38;5" with no index is malformed: the colour is dropped, the text kept, nothing crashes.
}

TEST(TerminalText, AColourCarriesOverLinesUntilReset) {
  TerminalText t;
  const auto lines = t.feed("\x1b[33mwarn\nstill yellow\x1b[0m\n");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].runs, (std::vector<StyleRun>{{0, 12, fg(TextStyle::kIndexed | 3)}}));
  EXPECT_EQ(t.feed("\x1b[31mred, being wr").size(), 0u);
  EXPECT_EQ(t.pending().runs, (std::vector<StyleRun>{{0, 13, fg(kRed)}}));
}

TEST(TerminalText, ARedrawnProgressBarKeepsTheStylesOfItsLastState) {
  TerminalText t;
  const auto lines = t.feed("\x1b[31m 10%\x1b[0m|#  |\r\x1b[32m100%\x1b[0m|###|\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].text, "100%|###|");
  EXPECT_EQ(lines[0].runs, (std::vector<StyleRun>{{0, 4, fg(TextStyle::kIndexed | 2)}}));
}

TEST(TerminalText, EraseInLineErases) {
  TerminalText t;
  EXPECT_EQ(texts(t.feed("a long status line\r\x1b[Kshort\n")), (Lines{"short"}));
  EXPECT_EQ(texts(t.feed("something\r\x1b[2Kx\n")), (Lines{"x"}));
  EXPECT_EQ(texts(t.feed("abcdef\rab\x1b[1K!\n")), (Lines{"  !def"}));
}

}  // namespace
}  // namespace ringmaster::gui

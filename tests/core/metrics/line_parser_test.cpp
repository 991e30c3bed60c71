#include "ringmaster/metrics/line_parser.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <string>

namespace ringmaster::metrics {
namespace {

using Values = std::vector<std::pair<std::string, double>>;

TEST(ParseJsonMetricLine, ParsesStepAndValuesInOrder) {
  auto m = parseJsonMetricLine(R"({"step": 10, "loss": 0.31, "lr": 1e-3})");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->step, 10);
  EXPECT_EQ(m->values, (Values{{"loss", 0.31}, {"lr", 1e-3}}));
}

TEST(ParseJsonMetricLine, StepIsOptional) {
  auto m = parseJsonMetricLine(R"({"acc":1})");
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->step);
  EXPECT_EQ(m->values, (Values{{"acc", 1.0}}));
}

TEST(ParseJsonMetricLine, AcceptsSurroundingWhitespaceAndCrLf) {
  auto m = parseJsonMetricLine(" \t{ \"a\" :\n-2.5E+2 ,\"b\":0 }\r\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->values, (Values{{"a", -250.0}, {"b", 0.0}}));
}

TEST(ParseJsonMetricLine, AcceptsEveryJsonNumberForm) {
  auto m = parseJsonMetricLine(
      R"({"a":0,"b":-0,"c":123,"d":-1.5,"e":1e3,"f":1E-3,"g":2.5e+1,"h":0.000001})");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->values.size(), 8u);
  EXPECT_EQ(m->values[4].second, 1000.0);
  EXPECT_EQ(m->values[5].second, 0.001);
  EXPECT_EQ(m->values[6].second, 25.0);
  EXPECT_EQ(m->values[7].second, 1e-6);
}

TEST(ParseJsonMetricLine, StepMustBeAnIntegerValue) {
  EXPECT_EQ(parseJsonMetricLine(R"({"step":1e3,"x":1})")->step, 1000);
  EXPECT_EQ(parseJsonMetricLine(R"({"step":7.0,"x":1})")->step, 7);
  EXPECT_EQ(parseJsonMetricLine(R"({"step":-3,"x":1})")->step, -3);
  EXPECT_EQ(parseJsonMetricLine(R"({"step":9223372036854775807,"x":1})")->step, INT64_MAX);
  EXPECT_FALSE(parseJsonMetricLine(R"({"step":1.5,"x":1})"));
  EXPECT_FALSE(parseJsonMetricLine(R"({"step":9223372036854775808,"x":1})"));
  EXPECT_FALSE(parseJsonMetricLine(R"({"step":1e19,"x":1})"));
}

TEST(ParseJsonMetricLine, RejectsRecordsWithoutValues) {
  EXPECT_FALSE(parseJsonMetricLine("{}"));
  EXPECT_FALSE(parseJsonMetricLine(R"({"step": 3})"));
}

TEST(ParseJsonMetricLine, RejectsNonNumericValues) {
  for (const char* line :
       {R"({"a":true})", R"({"a":false})", R"({"a":null})", R"({"a":"1"})", R"({"a":[1]})",
        R"({"a":{"b":1}})", R"({"a":NaNa})", R"({"a":Inf})", R"({"a":-NaN})", R"({"a":nan})",
        R"({"a":inf})", R"({"a":1e400})", R"({"a":-1e999})", R"({"a":1e-400})"}) {
    EXPECT_FALSE(parseJsonMetricLine(line)) << line;
  }
}

// Regression (issue 21): Python's json.dumps writes NaN, Infinity and -Infinity, and a diverging
// loss is the one value a dashboard must never hide; the line used to be dropped as a log line.
TEST(ParseJsonMetricLine, KeepsNaNAndInfinitiesAsValues) {
  auto parsed =
      parseJsonMetricLine(R"({"step": 50, "loss": NaN, "grad": Infinity, "lr": -Infinity})");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->step, 50);
  ASSERT_EQ(parsed->values.size(), 3u);
  EXPECT_TRUE(std::isnan(parsed->values[0].second));
  EXPECT_EQ(parsed->values[1].second, std::numeric_limits<double>::infinity());
  EXPECT_EQ(parsed->values[2].second, -std::numeric_limits<double>::infinity());
  EXPECT_FALSE(parseJsonMetricLine(R"({"step": NaN, "loss": 1})"));
  EXPECT_FALSE(parseJsonMetricLine(R"({"step": Infinity, "loss": 1})"));
}

TEST(ParseJsonMetricLine, RejectsNumbersOutsideTheJsonGrammar) {
  for (const char* line :
       {R"({"a":01})", R"({"a":+1})", R"({"a":.5})", R"({"a":1.})", R"({"a":1e})", R"({"a":1e+})",
        R"({"a":-})", R"({"a":0x10})", R"({"a":1_000})", R"({"a":1 2})", R"({"a":--1})"}) {
    EXPECT_FALSE(parseJsonMetricLine(line)) << line;
  }
}

TEST(ParseJsonMetricLine, RejectsMalformedObjects) {
  for (const char* line : {"",
                           "   ",
                           "loss=0.3",
                           "[1,2]",
                           "{",
                           "{\"a\":1",
                           "{\"a\":1,}",
                           "{,\"a\":1}",
                           "{\"a\" 1}",
                           "{a:1}",
                           "{'a':1}",
                           "{\"a\":1}}",
                           "{\"a\":1} x",
                           "{\"a\":1}{\"b\":2}",
                           "{\"a\":1,,\"b\":2}",
                           "{\"a\":}",
                           "{\"a\"}",
                           "{\"a\":1\"b\":2}",
                           "\"a\"",
                           "{\"a\":1}\v"}) {
    EXPECT_FALSE(parseJsonMetricLine(line)) << line;
  }
}

TEST(ParseJsonMetricLine, RejectsDuplicateKeys) {
  EXPECT_FALSE(parseJsonMetricLine(R"({"a":1,"a":2})"));
  EXPECT_FALSE(parseJsonMetricLine(R"({"step":1,"a":1,"step":2})"));
  // Duplicates count after unescaping.
  EXPECT_FALSE(parseJsonMetricLine(R"({"ab":1,"a\u0062":2})"));
  // Many keys take the sorted path.
  std::string line = "{";
  for (int i = 0; i < 40; ++i) line += "\"k" + std::to_string(i) + "\":1,";
  line += "\"k17\":2}";
  EXPECT_FALSE(parseJsonMetricLine(line));
}

TEST(ParseJsonMetricLine, DecodesKeyEscapes) {
  auto m = parseJsonMetricLine(R"({"a\"b":1,"c\\d":2,"e\/f":3,"\u00e9":4,"\ud83d\ude00":5})");
  ASSERT_TRUE(m);
  EXPECT_EQ(
      m->values,
      (Values{{"a\"b", 1}, {"c\\d", 2}, {"e/f", 3}, {"\xC3\xA9", 4}, {"\xF0\x9F\x98\x80", 5}}));
  // "step" spelled with an escape is still the step.
  EXPECT_EQ(parseJsonMetricLine(R"({"st\u0065p":4,"x":1})")->step, 4);
}

TEST(ParseJsonMetricLine, RejectsBadKeys) {
  for (const char* line :
       {R"({"":1})", R"({"\ud83d":1})", R"({"\ude00":1})", R"({"\ud83d\u0041":1})",
        R"({"\u00G0":1})", R"({"\u00e":1})", R"({"\x41":1})", R"({"a\nb":1})", R"({"\u0000":1})",
        "{\"a\tb\":1}", "{\"\xC3\x28\":1}", "{\"\xC0\xAF\":1}", "{\"\xED\xA0\x80\":1}",
        "{\"\xF4\x90\x80\x80\":1}", "{\"\xE2\x82\":1}", R"({"abc)", R"({"abc\)"}) {
    EXPECT_FALSE(parseJsonMetricLine(line)) << line;
  }
  EXPECT_TRUE(parseJsonMetricLine("{\"\xE2\x82\xAC\":1}"));  // raw UTF-8 is fine
}

TEST(ParseJsonMetricLine, EnforcesKeyLengthLimit) {
  const std::string ok(kMaxMetricKeyBytes, 'k');
  EXPECT_TRUE(parseJsonMetricLine("{\"" + ok + "\":1}"));
  EXPECT_FALSE(parseJsonMetricLine("{\"" + ok + "k\":1}"));
  // The limit is on decoded bytes: 43 escaped euro signs are 129 bytes.
  std::string escaped;
  for (int i = 0; i < 43; ++i) escaped += "\\u20ac";
  EXPECT_FALSE(parseJsonMetricLine("{\"" + escaped + "\":1}"));
}

TEST(ParseJsonMetricLine, EnforcesKeyCountLimit) {
  auto object = [](size_t keys) {
    std::string line = "{\"step\":1";
    for (size_t i = 1; i < keys; ++i)
      line += ",\"m" + std::to_string(i) + "\":" + std::to_string(i);
    return line + "}";
  };
  auto m = parseJsonMetricLine(object(kMaxMetricKeys));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->values.size(), kMaxMetricKeys - 1);
  EXPECT_FALSE(parseJsonMetricLine(object(kMaxMetricKeys + 1)));
}

TEST(ParseJsonMetricLine, NeverReadsPastTheView) {
  // The view ends inside a longer buffer: the parser must not see the closing brace.
  const std::string buffer = R"({"a":1})";
  for (size_t n = 0; n < buffer.size(); ++n) {
    EXPECT_FALSE(parseJsonMetricLine(std::string_view(buffer.data(), n))) << n;
  }
  EXPECT_TRUE(parseJsonMetricLine(buffer));
  // Embedded NUL is just a byte that is not allowed.
  EXPECT_FALSE(parseJsonMetricLine(std::string_view("{\"a\":1}\0", 8)));
}

TEST(PatternMatcher, MatchesNamedPatterns) {
  auto matcher = PatternMatcher::compile({{"step", R"(step (\d+))"},
                                          {"loss", R"(loss[=:]\s*([-+0-9.eE]+))"},
                                          {"acc", R"(acc (\S+))"}});
  ASSERT_TRUE(matcher.isOk()) << matcher.status().toString();
  EXPECT_FALSE(matcher->empty());
  auto m = matcher->match("epoch 1 step 120 loss=0.25 acc 0.9");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->step, 120);
  EXPECT_EQ(m->values, (Values{{"loss", 0.25}, {"acc", 0.9}}));

  m = matcher->match("loss: +1.5e-2");
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->step);
  EXPECT_EQ(m->values, (Values{{"loss", 0.015}}));
}

TEST(PatternMatcher, LineMatchingNothingIsNotARecord) {
  auto matcher = PatternMatcher::compile({{"step", R"(step (\d+))"}, {"loss", R"(loss (\S+))"}});
  ASSERT_TRUE(matcher.isOk());
  EXPECT_FALSE(matcher->match("hello world"));
  EXPECT_FALSE(matcher->match("step 5"));  // a step alone has nothing to record
  EXPECT_FALSE(matcher->match(""));
}

TEST(PatternMatcher, GroupThatIsNotANumberDoesNotMatch) {
  auto matcher = PatternMatcher::compile({{"loss", R"(loss (\S+))"}, {"step", R"(step (\S+))"}});
  ASSERT_TRUE(matcher.isOk());
  for (const char* line : {"loss 1.5x", "loss +-1", "loss 1e999", "loss 0x1p3"}) {
    EXPECT_FALSE(matcher->match(line)) << line;
  }
  auto m = matcher->match("step 2.5 loss 1");  // non-integer step is ignored, the value kept
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->step);
  EXPECT_EQ(m->values, (Values{{"loss", 1.0}}));
}

// What print() shows of a diverged float ("nan", "inf", "-inf") is a value; it is never a step.
TEST(PatternMatcher, NonFiniteValuesMatchButNeverAsTheStep) {
  auto matcher = PatternMatcher::compile({{"loss", R"(loss (\S+))"}, {"step", R"(step (\S+))"}});
  ASSERT_TRUE(matcher.isOk());
  auto nan = matcher->match("step 7 loss nan");
  ASSERT_TRUE(nan);
  EXPECT_EQ(nan->step, 7);
  EXPECT_TRUE(std::isnan(nan->values.at(0).second));
  auto inf = matcher->match("step inf loss -inf");
  ASSERT_TRUE(inf);
  EXPECT_FALSE(inf->step);
  EXPECT_EQ(inf->values.at(0).second, -std::numeric_limits<double>::infinity());
}

TEST(PatternMatcher, FirstMatchingPatternForANameWins) {
  auto matcher =
      PatternMatcher::compile({{"loss", R"(train_loss=(\S+))"}, {"loss", R"(loss (\S+))"}});
  ASSERT_TRUE(matcher.isOk());
  EXPECT_EQ(matcher->match("loss 2 train_loss=1")->values, (Values{{"loss", 1.0}}));
  EXPECT_EQ(matcher->match("loss 2")->values, (Values{{"loss", 2.0}}));
}

TEST(PatternMatcher, OptionalGroupThatDidNotParticipate) {
  auto matcher = PatternMatcher::compile({{"x", R"(x(?:=(\d+))?$)"}});
  ASSERT_TRUE(matcher.isOk());
  EXPECT_FALSE(matcher->match("x"));
  EXPECT_EQ(matcher->match("x=4")->values, (Values{{"x", 4.0}}));
}

TEST(PatternMatcher, RejectsBadPatternsNamingThem) {
  auto bad = PatternMatcher::compile({{"ok", R"(a (\d+))"}, {"loss", "loss ([0-9"}});
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("pattern 1"), std::string::npos);
  EXPECT_NE(bad.status().message().find("loss"), std::string::npos);

  auto no_group = PatternMatcher::compile({{"lr", R"(lr \d+)"}});
  ASSERT_FALSE(no_group.isOk());
  EXPECT_EQ(no_group.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(no_group.status().message().find("capture group"), std::string::npos);

  EXPECT_FALSE(PatternMatcher::compile({{"", R"((\d+))"}}).isOk());
}

// std::regex backtracked without limit here: `(\d+)*z` on 28 digits took 25 s, on the agent's
// only thread. RE2 is linear in the line; the longest line it is offered takes microseconds.
TEST(PatternMatcher, APathologicalPatternCannotStallTheParser) {
  auto matcher = PatternMatcher::compile({{"x", R"((\d+)*z)"}});
  ASSERT_TRUE(matcher.isOk()) << matcher.status().toString();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(matcher->match(std::string(28, '7')));
  EXPECT_FALSE(matcher->match(std::string(kMaxPatternLineBytes, '7')));
  EXPECT_EQ(matcher->match("123z")->values[0].second, 123.0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(PatternMatcher, WhatRe2CannotDoIsRefusedNamingIt) {
  auto lookahead = checkMetricPattern(R"(loss (?=\d)(\d+))");
  EXPECT_EQ(lookahead.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(lookahead.message().find("invalid regex"), std::string::npos) << lookahead.message();
  EXPECT_TRUE(checkMetricPattern(R"(loss=([-+0-9.eE]+))").isOk());
}

TEST(PatternMatcher, EmptyMatcherMatchesNothing) {
  auto matcher = PatternMatcher::compile({});
  ASSERT_TRUE(matcher.isOk());
  EXPECT_TRUE(matcher->empty());
  EXPECT_FALSE(matcher->match("loss 1"));
  EXPECT_TRUE(PatternMatcher().empty());
}

TEST(PatternMatcher, IgnoresOverlongLines) {
  auto matcher = PatternMatcher::compile({{"loss", R"(loss (\d+))"}});
  ASSERT_TRUE(matcher.isOk());
  std::string line = "loss 1 ";
  EXPECT_TRUE(matcher->match(line));
  line.append(kMaxPatternLineBytes, 'x');
  EXPECT_FALSE(matcher->match(line));
}

}  // namespace
}  // namespace ringmaster::metrics

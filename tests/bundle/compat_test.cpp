// installer/glibc231/compat.h stands in for std::from_chars (floating point), std::bit_cast and
// sigabbrev_np in the glibc 2.31 bundle's build (GCC 10, glibc 2.31). Here, on Debian 12, the
// real ones exist: its replacements must read, refuse and name exactly as they do, or the
// bundle would parse specs, metrics and /proc differently from the tested build.
#include "glibc231/compat.h"

#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

// Numbers as the spec parser, the metrics line parser, the dataset reader and the host sampler
// meet them, and each way a text can fail to be one.
const std::vector<std::string> kTexts = {
    "0", "-0", "1", "42", "3.14159", "-2.5", ".5", "5.", "1e3", "1E-3", "2.5e+10", "-1.25e-7",
    "0.1", "123456789012345678901234567890", "0.000001", "1e308", "3.4e38", "1e39", "1e400",
    "-1e400", "1e-300", "1e-400", "4.9e-324", "1.17549435e-38", "1e-45", "1e-50",
    // inf and nan, spelled as from_chars takes them
    "inf", "-inf", "INF", "Infinity", "-infinity", "infinit", "nan", "-nan", "NaN", "nan(123)",
    "nan(abc_1)", "nan(", "nan(12", "nanx",
    // prefixes, with something after the number
    "1.5 rest", "2e", "2e+", "2e-x", "3.e2", "7,5", "1.2.3", "12abc", "0x1p3", "0X10", "1e5x",
    "  12", "\t1", "+1", "-", "+", ".", "-.", "e5", "", "--1", "-.5e-2"};

template <typename Float>
void expectSameAsLibrary(const std::string& text) {
  Float real = 7, mine = 7;  // untouched on failure: both must leave it
  const char* first = text.data();
  const char* last = first + text.size();
  const auto expected = std::from_chars(first, last, real);
  const auto actual = ringmaster_compat::parseFloat(first, last, mine);
  SCOPED_TRACE("'" + text + "' as " + (sizeof(Float) == 4 ? "float" : "double"));
  EXPECT_EQ(actual.ptr - first, expected.ptr - first);
  EXPECT_EQ(static_cast<int>(actual.ec), static_cast<int>(expected.ec));
  if (std::isnan(real)) {
    EXPECT_TRUE(std::isnan(mine));
    EXPECT_EQ(std::signbit(mine), std::signbit(real));
  } else {
    EXPECT_EQ(std::memcmp(&mine, &real, sizeof(Float)), 0) << mine << " vs " << real;
  }
}

TEST(Glibc231Compat, FromCharsReadsDoublesAsTheLibraryDoes) {
  for (const auto& text : kTexts) expectSameAsLibrary<double>(text);
}

TEST(Glibc231Compat, FromCharsReadsFloatsAsTheLibraryDoes) {
  for (const auto& text : kTexts) expectSameAsLibrary<float>(text);
}

TEST(Glibc231Compat, FromCharsStopsAtTheEndItIsGiven) {
  // string_views into a longer buffer: the digits after `last` are not part of the number.
  const std::string text = "12.75e3";
  for (size_t length = 0; length <= text.size(); ++length) {
    expectSameAsLibrary<double>(text.substr(0, length));
    double real = 0, mine = 0;
    const auto expected = std::from_chars(text.data(), text.data() + length, real);
    const auto actual = ringmaster_compat::parseFloat(text.data(), text.data() + length, mine);
    EXPECT_EQ(actual.ptr, expected.ptr) << length;
    EXPECT_EQ(mine, real) << length;
  }
}

// A locale with a decimal comma: an installed one, else de_DE compiled with localedef into a
// directory of the test's own (LOCPATH); false when neither can be had.
bool useDecimalCommaLocale() {
  if (std::setlocale(LC_NUMERIC, "de_DE.UTF-8") || std::setlocale(LC_NUMERIC, "fr_FR.UTF-8")) {
    return true;
  }
  char dir[] = "/tmp/rm-compat-locale.XXXXXX";
  if (!mkdtemp(dir)) return false;
  const std::string command =
      "localedef -i de_DE -f UTF-8 " + std::string(dir) + "/de_DE.UTF-8 >/dev/null 2>&1";
  if (std::system(command.c_str()) != 0) return false;
  setenv("LOCPATH", dir, 1);
  const bool loaded = std::setlocale(LC_NUMERIC, "de_DE.UTF-8") != nullptr;
  std::filesystem::remove_all(dir);  // loaded (mapped) already: the files are not needed
  return loaded;
}

TEST(Glibc231Compat, FromCharsIgnoresTheProcessLocale) {
  // With a decimal comma, strtod alone stops at '.'; from_chars never looks at the locale.
  if (!useDecimalCommaLocale()) GTEST_SKIP() << "no locale with a decimal comma could be had";
  const std::string text = "2.5";
  const double by_strtod = std::strtod(text.c_str(), nullptr);
  double value = 0;
  const auto result = ringmaster_compat::parseFloat(text.data(), text.data() + text.size(), value);
  std::setlocale(LC_NUMERIC, "C");
  EXPECT_EQ(by_strtod, 2.0) << "the locale has no decimal comma: the test proves nothing";
  EXPECT_EQ(result.ptr, text.data() + text.size());
  EXPECT_EQ(value, 2.5);
}

TEST(Glibc231Compat, BitCastMatchesTheLibrary) {
  for (uint32_t bits : {0u, 1u, 0x3f800000u, 0x7f800000u, 0x80000000u, 0x4b000000u, 0xffffffffu}) {
    const float real = std::bit_cast<float>(bits);
    const float mine = ringmaster_compat::bitCast<float>(bits);
    EXPECT_EQ(std::memcmp(&real, &mine, sizeof real), 0) << bits;
    EXPECT_EQ(ringmaster_compat::bitCast<uint32_t>(mine), bits);
  }
  EXPECT_EQ(ringmaster_compat::bitCast<uint64_t>(1.0), std::bit_cast<uint64_t>(1.0));
}

TEST(Glibc231Compat, SignalNamesMatchGlibc) {
  for (int signal = -1; signal <= 70; ++signal) {
    const char* real = ::sigabbrev_np(signal);
    const char* mine = ringmaster_compat::signalAbbreviation(signal);
    SCOPED_TRACE(signal);
    ASSERT_EQ(mine == nullptr, real == nullptr);
    if (real) {
      EXPECT_STREQ(mine, real);
    }
  }
}

}  // namespace

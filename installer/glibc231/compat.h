// Forced include (g++ -include) of the glibc 2.31 bundle's build only (make-bundle-glibc231.sh),
// which compiles Ringmaster in a Debian 11 root with its GCC 10, libstdc++ 10 and glibc 2.31 so
// that the programs run on every host from glibc 2.31 up (Ubuntu 22.04, RHEL 9, Debian 11).
// It supplies the few standard pieces Ringmaster uses that arrived after those versions, each
// only where the library lacks it, so the same sources build unchanged on Debian 12:
//   std::from_chars for float and double   libstdc++ 11 (__cpp_lib_to_chars)
//   std::bit_cast                          libstdc++ 11 (__cpp_lib_bit_cast)
//   sigabbrev_np                           glibc 2.32
#pragma once

// Only for C++20 sources: CMake's own compiler checks compile this too, in older modes.
#if defined(__cplusplus) && __cplusplus > 201703L

#include <locale.h>

#include <cerrno>
#include <charconv>
#include <clocale>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <version>

// The replacements are always defined (tests/bundle/compat_test.cpp holds them to the real ones
// on Debian 12); they stand in for the standard names only where the library lacks them.
namespace ringmaster_compat {

inline bool isDigit(char c) { return c >= '0' && c <= '9'; }

inline bool startsWithNoCase(const char* first, const char* last, const char* word) {
  for (; *word; ++word, ++first) {
    if (first == last || (*first | 0x20) != *word) return false;
  }
  return true;
}

// The end of the longest prefix of [first, last) that std::from_chars(chars_format::general)
// reads: [-] then inf, infinity, nan, nan(chars) or digits[.digits][e[+-]digits]; `first` when
// none. Unlike strtod it takes no leading space, no '+' and no hexadecimal.
inline const char* floatEnd(const char* first, const char* last) {
  const char* p = first;
  if (p != last && *p == '-') ++p;
  if (startsWithNoCase(p, last, "infinity")) return p + 8;
  if (startsWithNoCase(p, last, "inf")) return p + 3;
  if (startsWithNoCase(p, last, "nan")) {
    p += 3;
    if (p != last && *p == '(') {
      const char* q = p + 1;
      while (q != last && (isDigit(*q) || ((*q | 0x20) >= 'a' && (*q | 0x20) <= 'z') || *q == '_'))
        ++q;
      if (q != last && *q == ')') return q + 1;
    }
    return p;
  }
  const char* digits = p;
  while (p != last && isDigit(*p)) ++p;
  bool any = p != digits;
  if (p != last && *p == '.') {
    const char* fraction = ++p;
    while (p != last && isDigit(*p)) ++p;
    any = any || p != fraction;
  }
  if (!any) return first;
  if (p != last && (*p | 0x20) == 'e') {
    const char* q = p + 1;
    if (q != last && (*q == '+' || *q == '-')) ++q;
    if (q != last && isDigit(*q)) {
      while (q != last && isDigit(*q)) ++q;
      p = q;
    }
  }
  return p;
}

// strtod/strtof in the "C" locale on a terminated copy of the accepted prefix: the number is
// read exactly as from_chars reads it, whatever setlocale() the program made.
template <typename Float>
std::from_chars_result parseFloat(const char* first, const char* last, Float& value) {
  const char* end = floatEnd(first, last);
  if (end == first) return {first, std::errc::invalid_argument};
  static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", locale_t{});
  const std::string text(first, end);
  char* stop = nullptr;
  errno = 0;
  Float parsed;
  if constexpr (std::is_same_v<Float, float>) {
    parsed = strtof_l(text.c_str(), &stop, c_locale);
  } else {
    parsed = strtod_l(text.c_str(), &stop, c_locale);
  }
  if (stop != text.c_str() + text.size()) return {first, std::errc::invalid_argument};
  // Overflow, or underflow to zero; a subnormal result is a value (strtod's ERANGE aside), as
  // libstdc++ 12 reads it.
  if (errno == ERANGE && (std::isinf(parsed) || parsed == 0)) {
    return {end, std::errc::result_out_of_range};
  }
  value = parsed;
  return {end, std::errc{}};
}

template <typename To, typename From>
To bitCast(const From& from) noexcept {
  static_assert(sizeof(To) == sizeof(From) && std::is_trivially_copyable_v<To> &&
                    std::is_trivially_copyable_v<From>,
                "bit_cast: same size, trivially copyable");
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

// glibc 2.32's sigabbrev_np: a signal's name without "SIG", or null for one it does not name.
inline const char* signalAbbreviation(int signal) {
  static const char* const names[] = {
      nullptr, "HUP",  "INT",  "QUIT", "ILL",    "TRAP",   "ABRT",  "BUS",  "FPE",  "KILL", "USR1",
      "SEGV",  "USR2", "PIPE", "ALRM", "TERM",   "STKFLT", "CHLD",  "CONT", "STOP", "TSTP", "TTIN",
      "TTOU",  "URG",  "XCPU", "XFSZ", "VTALRM", "PROF",   "WINCH", "POLL", "PWR",  "SYS"};
  static_assert(SIGSYS == 31 && SIGIO == 29, "Linux signal numbers");
  if (signal <= 0 || signal >= static_cast<int>(sizeof names / sizeof names[0])) return nullptr;
  return names[signal];
}

}  // namespace ringmaster_compat

#if !defined(__cpp_lib_to_chars)
namespace std {
inline from_chars_result from_chars(const char* first, const char* last, double& value,
                                    chars_format = chars_format::general) {
  return ringmaster_compat::parseFloat(first, last, value);
}
inline from_chars_result from_chars(const char* first, const char* last, float& value,
                                    chars_format = chars_format::general) {
  return ringmaster_compat::parseFloat(first, last, value);
}
}  // namespace std
#endif  // !__cpp_lib_to_chars

#if !defined(__cpp_lib_bit_cast)
namespace std {
template <typename To, typename From>
To bit_cast(const From& from) noexcept {
  return ringmaster_compat::bitCast<To>(from);
}
}  // namespace std
#endif  // !__cpp_lib_bit_cast

#if defined(__GLIBC__) && (__GLIBC__ < 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ < 32))
inline const char* sigabbrev_np(int signal) {
  return ringmaster_compat::signalAbbreviation(signal);
}
#endif

#endif  // C++20

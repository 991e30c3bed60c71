#include "ringmaster/metrics/line_parser.h"

#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <limits>
#include <system_error>

namespace ringmaster::metrics {
namespace {

bool isJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void appendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF): names end up in
// protobuf string fields, which must hold valid UTF-8.
bool isValidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      len = 3;
      if (b0 == 0xE0) lo = 0xA0;  // overlong
      if (b0 == 0xED) hi = 0x9F;  // surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4;
      if (b0 == 0xF0) lo = 0x90;  // overlong
      if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return false;
    }
    if (n - i < len) return false;
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    if (b1 < lo || b1 > hi) return false;
    for (size_t k = 2; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < 0x80 || b > 0xBF) return false;
    }
    i += len;
  }
  return true;
}

// An integer-valued number as int64: exact for plain integer tokens, otherwise from the double
// when it has no fractional part and fits.
std::optional<int64_t> integralValue(std::string_view token, double value) {
  int64_t exact = 0;
  auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), exact);
  if (ptr == token.data() + token.size()) {  // all digits: exact, or out of range
    return ec == std::errc() ? std::optional<int64_t>(exact) : std::nullopt;
  }
  // 2^63 is exactly representable; every double below it in magnitude converts without UB.
  constexpr double kTwo63 = 9223372036854775808.0;
  if (value != std::trunc(value) || value < -kTwo63 || value >= kTwo63) return std::nullopt;
  return static_cast<int64_t>(value);
}

// Whole `token` as a double (NaN and infinities included: "nan", "inf", "-Infinity"...), or
// nullopt. A NaN loss is the one value a dashboard must never hide, so it is a value like any.
std::optional<double> anyDouble(std::string_view token) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc() || ptr != token.data() + token.size()) return std::nullopt;
  return value;
}

// Whole `token` as a finite double, or nullopt: what a step must be.
std::optional<double> finiteDouble(std::string_view token) {
  auto value = anyDouble(token);
  if (!value || !std::isfinite(*value)) return std::nullopt;
  return value;
}

class JsonLineParser {
 public:
  explicit JsonLineParser(std::string_view s) : s_(s) {}

  std::optional<ParsedMetrics> parse() {
    skipSpace();
    if (!consume('{')) return std::nullopt;
    skipSpace();
    // "{}" has no values, so it is not a record either; fall through to the key parser to reject.
    ParsedMetrics out;
    size_t keys = 0;
    std::string key;
    while (true) {
      if (!parseKey(key)) return std::nullopt;
      if (++keys > kMaxMetricKeys) return std::nullopt;
      skipSpace();
      if (!consume(':')) return std::nullopt;
      skipSpace();
      std::string_view token;
      std::optional<double> value;
      if (std::optional<double> special = scanNonFinite()) {
        if (key == "step") return std::nullopt;
        value = special;
      } else {
        if (!scanNumber(token)) return std::nullopt;
        value = finiteDouble(token);
      }
      if (!value) return std::nullopt;
      if (key == "step") {
        if (out.step) return std::nullopt;  // duplicate
        out.step = integralValue(token, *value);
        if (!out.step) return std::nullopt;
      } else {
        out.values.emplace_back(std::move(key), *value);
      }
      skipSpace();
      if (consume(',')) {
        skipSpace();
        continue;
      }
      if (consume('}')) break;
      return std::nullopt;
    }
    skipSpace();
    if (pos_ != s_.size()) return std::nullopt;
    if (out.values.empty() || hasDuplicateNames(out.values)) return std::nullopt;
    return out;
  }

 private:
  bool atEnd() const { return pos_ >= s_.size(); }
  void skipSpace() {
    while (pos_ < s_.size() && isJsonSpace(s_[pos_])) ++pos_;
  }
  bool consume(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // Four hex digits after "\u".
  bool readHex4(uint32_t& out) {
    if (s_.size() - pos_ < 4) return false;
    out = 0;
    for (int k = 0; k < 4; ++k) {
      const int h = hexValue(s_[pos_ + k]);
      if (h < 0) return false;
      out = (out << 4) | static_cast<uint32_t>(h);
    }
    pos_ += 4;
    return true;
  }

  bool parseKey(std::string& key) {
    key.clear();
    if (!consume('"')) return false;
    while (true) {
      if (atEnd()) return false;
      const char c = s_[pos_++];
      if (c == '"') break;
      if (static_cast<unsigned char>(c) < 0x20) return false;  // raw control character
      if (c != '\\') {
        key.push_back(c);
      } else {
        if (atEnd()) return false;
        const char e = s_[pos_++];
        switch (e) {
          case '"':
          case '\\':
          case '/':
            key.push_back(e);
            break;
          case 'u': {
            uint32_t cp = 0;
            if (!readHex4(cp)) return false;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // lone low surrogate
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              uint32_t low = 0;
              if (!consume('\\') || !consume('u') || !readHex4(low)) return false;
              if (low < 0xDC00 || low > 0xDFFF) return false;
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            }
            if (cp < 0x20) return false;  // escaped control character
            appendUtf8(cp, key);
            break;
          }
          default:
            // \b \f \n \r \t decode to control characters, which make no metric name.
            return false;
        }
      }
      if (key.size() > kMaxMetricKeyBytes) return false;
    }
    return !key.empty() && isValidUtf8(key);
  }

  // NaN, Infinity and -Infinity: what Python's json.dumps writes for non-finite floats.
  std::optional<double> scanNonFinite() {
    static constexpr std::pair<std::string_view, double> kLiterals[] = {
        {"NaN", std::numeric_limits<double>::quiet_NaN()},
        {"Infinity", std::numeric_limits<double>::infinity()},
        {"-Infinity", -std::numeric_limits<double>::infinity()}};
    for (const auto& [literal, value] : kLiterals) {
      if (s_.substr(pos_, literal.size()) == literal) {
        pos_ += literal.size();
        return value;
      }
    }
    return std::nullopt;
  }

  // JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool scanNumber(std::string_view& token) {
    const size_t start = pos_;
    consume('-');
    if (atEnd()) return false;
    if (s_[pos_] == '0') {
      ++pos_;
    } else if (isDigit(s_[pos_])) {
      while (pos_ < s_.size() && isDigit(s_[pos_])) ++pos_;
    } else {
      return false;
    }
    if (consume('.')) {
      if (atEnd() || !isDigit(s_[pos_])) return false;
      while (pos_ < s_.size() && isDigit(s_[pos_])) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (!consume('+')) consume('-');
      if (atEnd() || !isDigit(s_[pos_])) return false;
      while (pos_ < s_.size() && isDigit(s_[pos_])) ++pos_;
    }
    token = s_.substr(start, pos_ - start);
    return true;
  }

  static bool hasDuplicateNames(const std::vector<std::pair<std::string, double>>& values) {
    if (values.size() <= 16) {
      for (size_t i = 0; i < values.size(); ++i) {
        for (size_t j = i + 1; j < values.size(); ++j) {
          if (values[i].first == values[j].first) return true;
        }
      }
      return false;
    }
    std::vector<std::string_view> names;
    names.reserve(values.size());
    for (const auto& v : values) names.emplace_back(v.first);
    std::sort(names.begin(), names.end());
    return std::adjacent_find(names.begin(), names.end()) != names.end();
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

std::optional<ParsedMetrics> parseJsonMetricLine(std::string_view line) {
  try {
    return JsonLineParser(line).parse();
  } catch (const std::exception&) {  // only std::bad_alloc can get here
    return std::nullopt;
  }
}

namespace {

std::shared_ptr<const re2::RE2> compileRe2(const std::string& regex) {
  RE2::Options options;
  options.set_log_errors(false);  // errors are returned, not printed
  return std::make_shared<const re2::RE2>(regex, options);
}

Status explain(const re2::RE2& regex) {
  if (!regex.ok()) return invalidArgument("invalid regex: " + regex.error());
  if (regex.NumberOfCapturingGroups() < 1) {
    return invalidArgument("the regex needs a capture group holding the number");
  }
  return Status::ok();
}

}  // namespace

Status checkMetricPattern(const std::string& regex) { return explain(*compileRe2(regex)); }

Result<PatternMatcher> PatternMatcher::compile(
    const std::vector<std::pair<std::string, std::string>>& patterns) {
  PatternMatcher matcher;
  matcher.patterns_.reserve(patterns.size());
  for (size_t i = 0; i < patterns.size(); ++i) {
    const auto& [name, regex] = patterns[i];
    const std::string where =
        "metric pattern " + std::to_string(i) + " (\"" + name + "\", /" + regex + "/)";
    if (name.empty()) return invalidArgument(where + ": empty metric name");
    auto compiled = compileRe2(regex);
    if (Status status = explain(*compiled); !status.isOk()) {
      return invalidArgument(where + ": " + status.message());
    }
    matcher.patterns_.push_back(Pattern{name, std::move(compiled)});
  }
  return matcher;
}

std::optional<ParsedMetrics> PatternMatcher::match(std::string_view line) const {
  if (patterns_.empty() || line.size() > kMaxPatternLineBytes) return std::nullopt;
  ParsedMetrics out;
  try {
    for (const Pattern& p : patterns_) {
      const bool is_step = p.name == "step";
      if (is_step ? out.step.has_value()
                  : std::any_of(out.values.begin(), out.values.end(),
                                [&](const auto& v) { return v.first == p.name; })) {
        continue;  // an earlier pattern for this name already matched
      }
      re2::StringPiece group;
      if (!RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), *p.regex, &group) ||
          group.data() == nullptr) {
        continue;
      }
      std::string_view token(group.data(), group.size());
      if (token.size() > 1 && token[0] == '+' && token[1] != '-') token.remove_prefix(1);
      auto value = is_step ? finiteDouble(token) : anyDouble(token);
      if (!value) continue;
      if (is_step) {
        out.step = integralValue(token, *value);
      } else {
        out.values.emplace_back(p.name, *value);
      }
    }
  } catch (const std::exception&) {  // std::bad_alloc
    return std::nullopt;
  }
  if (out.values.empty()) return std::nullopt;
  return out;
}

}  // namespace ringmaster::metrics

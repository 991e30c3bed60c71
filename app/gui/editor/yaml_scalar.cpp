#include "editor/yaml_scalar.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <regex>

#include "ringmaster/util/yaml_quote.h"

namespace ringmaster::gui {
namespace {

// Characters that never start or change the meaning of a plain scalar in block or flow context.
bool isSafePlainChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' ||
         c == '-' || c == '+' || c == '=' || c == '@' || c == '%' || c == '^';
}

bool isSafePlain(std::string_view text) {
  if (text.empty()) return false;
  if (!std::all_of(text.begin(), text.end(), isSafePlainChar)) return false;
  // A lone "-" is a sequence entry; "%" starts a directive; "@" is reserved.
  if (text == "-" || text.front() == '%' || text.front() == '@') return false;
  return true;
}

// What yaml-cpp (and YAML 1.1/1.2 readers) would take as a number, bool or null.
bool looksTyped(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const char* const kWords[] = {"true", "false", "yes", "no",   "on",    "off",   "y",
                                       "n",    "null",  "~",   ".inf", "-.inf", "+.inf", ".nan"};
  for (const char* word : kWords) {
    if (lower == word) return true;
  }
  static const std::regex kNumber(
      R"([-+]?(\d[\d_]*)?(\.\d*)?([eE][-+]?\d+)?|0x[0-9a-fA-F]+|0o[0-7]+)", std::regex::ECMAScript);
  return std::any_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); }) &&
         std::regex_match(lower, kNumber);
}

std::string singleQuoted(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

}  // namespace

std::string yamlString(std::string_view text) {
  if (isSafePlain(text) && !looksTyped(text)) return std::string(text);
  const bool has_control = std::any_of(text.begin(), text.end(),
                                       [](char c) { return static_cast<unsigned char>(c) < 0x20; });
  return has_control ? yamlDoubleQuoted(text) : singleQuoted(text);
}

std::string yamlValue(std::string_view text) {
  if (isSafePlain(text)) return std::string(text);
  return yamlString(text);
}

std::string yamlKey(std::string_view text) { return yamlString(text); }

}  // namespace ringmaster::gui

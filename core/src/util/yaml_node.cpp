#include "ringmaster/util/yaml_node.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iterator>

namespace ringmaster::yaml {
namespace {

constexpr size_t kMaxQuoted = 40;

bool isControl(unsigned char c) { return c < 0x20 || c == 0x7f; }

bool looksLikeBool(const std::string& text) {
  static const char* const kWords[] = {"true", "false", "yes", "no", "on", "off"};
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(std::begin(kWords), std::end(kWords), lower) != std::end(kWords);
}

// "4.5", "1e3": a number, but not an integer.
bool looksLikeFraction(const std::string& text) {
  if (text.empty() || text.find_first_of(".eE") == std::string::npos) return false;
  if (text.find_first_of("xX") != std::string::npos) return false;
  char* end = nullptr;
  std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

}  // namespace

Location locationOf(const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return {};
  return {mark.line + 1, mark.column + 1};
}

Location locationOf(const YAML::Node& node) { return locationOf(node.Mark()); }

std::string quotedValue(std::string_view value) {
  std::string out = "'";
  const bool cut = value.size() > kMaxQuoted;
  for (unsigned char c : value.substr(0, kMaxQuoted)) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (isControl(c)) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + (cut ? "...'" : "'");
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      break;
    default:
      return "an undefined value";
  }
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return "the quoted string " + quotedValue(text);
  if (node.Tag() != "?") return quotedValue(text) + " tagged " + node.Tag();
  if (looksLikeBool(text)) return quotedValue(text) + " (a boolean)";
  if (looksLikeFraction(text)) return quotedValue(text) + " (not a whole number)";
  return quotedValue(text);
}

}  // namespace ringmaster::yaml

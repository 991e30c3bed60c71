#include "editor/shell_words.h"

#include <algorithm>

namespace ringmaster::gui {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool needsQuoting(const std::string& word) {
  if (word.empty()) return true;
  return std::any_of(word.begin(), word.end(), [](char c) {
    return isSpace(c) ||
           std::string_view("'\"\\$`!*?[]{}()<>|&;#~").find(c) != std::string_view::npos;
  });
}

}  // namespace

ShellSplit splitShellWords(std::string_view line) {
  ShellSplit out;
  std::string word;
  bool in_word = false;
  size_t i = 0;
  while (i < line.size()) {
    const char c = line[i];
    if (isSpace(c)) {
      if (in_word) out.words.push_back(std::move(word));
      word.clear();
      in_word = false;
      ++i;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      const size_t end = line.find('\'', i + 1);
      if (end == std::string_view::npos) {
        word.append(line.substr(i + 1));
        out.warning = "unterminated ' quote (closed at the end of the line)";
        i = line.size();
      } else {
        word.append(line.substr(i + 1, end - i - 1));
        i = end + 1;
      }
    } else if (c == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        const char d = line[i];
        if (d == '"') {
          closed = true;
          ++i;
          break;
        }
        if (d == '\\' && i + 1 < line.size() &&
            std::string_view("\"\\$`").find(line[i + 1]) != std::string_view::npos) {
          word.push_back(line[i + 1]);
          i += 2;
          continue;
        }
        word.push_back(d);
        ++i;
      }
      if (!closed) out.warning = "unterminated \" quote (closed at the end of the line)";
    } else if (c == '\\') {
      if (i + 1 < line.size()) {
        word.push_back(line[i + 1]);
        i += 2;
      } else {
        out.warning = "a backslash ends the line; it was dropped";
        ++i;
      }
    } else {
      word.push_back(c);
      ++i;
    }
  }
  if (in_word) out.words.push_back(std::move(word));
  return out;
}

std::string joinShellWords(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& word : words) {
    if (!line.empty()) line += ' ';
    if (!needsQuoting(word)) {
      line += word;
      continue;
    }
    // Single quotes keep everything literal; a quote inside becomes '\''.
    line += '\'';
    for (char c : word) {
      if (c == '\'') {
        line += "'\\''";
      } else {
        line += c;
      }
    }
    line += '\'';
  }
  return line;
}

}  // namespace ringmaster::gui

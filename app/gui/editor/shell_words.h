#pragma once
// Shell-like splitting and joining of a command line, so that the editor can show argv as one
// line a person can type ("python train.py --name 'my run'") and still submit an exact list.
//
// Thread safety: pure functions.

#include <string>
#include <string_view>
#include <vector>

namespace ringmaster::gui {

struct ShellSplit {
  std::vector<std::string> words;
  // Empty when the line was well formed; otherwise what was wrong (the split is still the best
  // reading, an unterminated quote being closed at the end of the line).
  std::string warning;
};

// POSIX-shell-like: whitespace separates words; '...' is literal; "..." allows \" \\ \$ \`;
// a backslash outside quotes escapes the next character. No expansion of any kind.
ShellSplit splitShellWords(std::string_view line);

// The inverse: each word quoted only when it needs to be, so splitShellWords(joinShellWords(w))
// gives w back for any w.
std::string joinShellWords(const std::vector<std::string>& words);

}  // namespace ringmaster::gui

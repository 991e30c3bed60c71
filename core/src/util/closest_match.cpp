#include "ringmaster/util/closest_match.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace ringmaster {
namespace {

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

bool startsWithIgnoringCase(std::string_view text, std::string_view prefix) {
  if (prefix.size() > text.size()) return false;
  return editDistance(text.substr(0, prefix.size()), prefix) == 0;
}

}  // namespace

std::string closestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.empty()) return "";
  // Up to a third of the word may be wrong; a word of 3+ characters may also be a prefix
  // ("torch" for "torchrun").
  const size_t allowed = std::max<size_t>(1, word.size() / 3);
  std::string best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (const std::string& candidate : candidates) {
    size_t distance = editDistance(word, candidate);
    if (distance > allowed && word.size() >= 3 && startsWithIgnoringCase(candidate, word)) {
      distance = allowed;
    }
    if (distance <= allowed && distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace ringmaster

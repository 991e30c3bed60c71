#pragma once
// "did you mean ...?" for every parser of user input (job specs, the native trainer's config,
// Slurm requests, placement): one place, so that modules need not borrow it from each other.

#include <string>
#include <string_view>
#include <vector>

namespace ringmaster {

// The candidate closest to `word` by edit distance (ignoring case), or "" when none is close
// enough to be a plausible typo.
std::string closestMatch(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace ringmaster

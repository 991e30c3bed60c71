#pragma once
// What every YAML reader of Ringmaster (job specs, Slurm requests, the cluster file, the native
// trainer's config) says about a node in a diagnostic: where it is, and how it reads in
// "expected X, got Y". One place, so that they point and quote alike.

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

namespace ringmaster::yaml {

// 1-based; 0 when unknown.
struct Location {
  int line = 0;
  int column = 0;
};

Location locationOf(const YAML::Mark& mark);
Location locationOf(const YAML::Node& node);
inline int lineOf(const YAML::Node& node) { return locationOf(node).line; }

// 'value', with control characters written as escapes so that a diagnostic stays on one line,
// and values over 40 characters cut ("...'").
std::string quotedValue(std::string_view value);

// "nothing", "a list", "a mapping", "the quoted string 'x'", "'x' tagged !t", "'yes' (a
// boolean)", "'4.5' (not a whole number)", or the scalar quoted.
std::string describe(const YAML::Node& node);

}  // namespace ringmaster::yaml

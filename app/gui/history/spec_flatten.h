#pragma once
// A job spec (YAML) as flat key → value rows, for comparing the configs of runs side by side:
// nested keys are joined with '.' and list items indexed, as the spec's own error messages name
// fields ("train.lr", "env.FOO", "placement[1].agent"). A list of plain values stays one row
// ("[python3, train.py]"): one argument changed reads as one changed row. Qt-free.

#include <map>
#include <string>
#include <vector>

#include "ringmaster/util/result.h"

namespace ringmaster::gui {

// Keys in the document's order (the spec's author's order reads best); values as written.
using FlatSpec = std::vector<std::pair<std::string, std::string>>;

// The rows of `yaml`; an empty document gives none. Bad YAML gives kInvalidArgument naming
// the line. A mapping that is empty gives one row with the value "{}" (and "[]" for a list).
Result<FlatSpec> flattenSpec(const std::string& yaml);

// Several specs aligned on their keys: the union of keys in the first spec's order, a key only
// later specs have placed after the key it follows there; each with one value per spec ("" where
// a spec lacks the key, and `present` says so), and whether the values differ.
struct SpecDiffRow {
  std::string key;
  std::vector<std::string> values;
  std::vector<bool> present;
  bool differs = false;  // a value differs, or the key is missing from some spec
};
std::vector<SpecDiffRow> diffSpecs(const std::vector<FlatSpec>& specs);

}  // namespace ringmaster::gui

#pragma once
// KeptKey: an entry of a spec that the form has no field for (a misspelt `frobnicate: 3`, a
// restart key such as on_hang), kept so that a form edit, which rewrites the whole YAML, never
// deletes it: a misspelt key is still the person's intent, and the validator goes on flagging it
// (and blocking Launch) in the YAML it is written back into.
//
// Thread safety: plain data and pure functions.

#include <string>
#include <string_view>
#include <vector>

namespace YAML {
class Node;
}

namespace ringmaster::gui {

struct KeptKey {
  // "" for the top level, else the mapping it is in: "restart", "native.optimizer".
  std::string section;
  std::string key;
  // At the top level: the entry's lines as written, the comment lines just above it included.
  // In a section: "key: value", the value as a YAML flow node (the form writes sections in its
  // own layout, often as flow mappings, so the original lines would not fit in).
  std::string text;
  // At the top level: the form's key that came before it in the file ("" when none did), so
  // that the rewritten YAML puts it back in the same place.
  std::string after;
};

// The entries of the spec `root` (parsed from `text`) that readJobDraft does not read, in the
// order of the file.
std::vector<KeptKey> findKeptKeys(const YAML::Node& root, std::string_view text);

// The kept "key: value" texts of `section`, in order.
std::vector<std::string> keptIn(const std::vector<KeptKey>& kept, std::string_view section);

}  // namespace ringmaster::gui

#include "history/spec_flatten.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

namespace ringmaster::gui {
namespace {

bool allScalars(const YAML::Node& seq) {
  for (const YAML::Node& item : seq) {
    if (!item.IsScalar() && !item.IsNull()) return false;
  }
  return true;
}

std::string scalarText(const YAML::Node& node) {
  return node.IsNull() ? std::string("null") : node.Scalar();
}

void flatten(const YAML::Node& node, const std::string& key, FlatSpec* out) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      if (node.size() == 0) {
        out->emplace_back(key, "{}");
        return;
      }
      for (const auto& entry : node) {
        const std::string name = entry.first.Scalar();
        flatten(entry.second, key.empty() ? name : key + "." + name, out);
      }
      return;
    case YAML::NodeType::Sequence:
      if (allScalars(node)) {
        std::string text = "[";
        for (size_t i = 0; i < node.size(); ++i) {
          if (i > 0) text += ", ";
          text += scalarText(node[i]);
        }
        out->emplace_back(key, text + "]");
        return;
      }
      for (size_t i = 0; i < node.size(); ++i) {
        flatten(node[i], key + "[" + std::to_string(i) + "]", out);
      }
      return;
    case YAML::NodeType::Scalar:
      out->emplace_back(key, node.Scalar());
      return;
    case YAML::NodeType::Null:
      if (!key.empty()) out->emplace_back(key, "null");
      return;
    case YAML::NodeType::Undefined:
      return;
  }
}

}  // namespace

Result<FlatSpec> flattenSpec(const std::string& yaml) {
  FlatSpec rows;
  try {
    flatten(YAML::Load(yaml), "", &rows);
  } catch (const YAML::Exception& e) {
    // yaml-cpp's marks count from 0.
    return invalidArgument("the spec is not valid YAML (line " + std::to_string(e.mark.line + 1) +
                           "): " + e.msg);
  }
  return rows;
}

std::vector<SpecDiffRow> diffSpecs(const std::vector<FlatSpec>& specs) {
  std::vector<SpecDiffRow> rows;
  auto rowOf = [&rows](const std::string& key) {
    return std::find_if(rows.begin(), rows.end(),
                        [&key](const SpecDiffRow& row) { return row.key == key; });
  };
  for (size_t s = 0; s < specs.size(); ++s) {
    std::string previous;  // this spec's key before the current one
    for (const auto& [key, value] : specs[s]) {
      auto row = rowOf(key);
      if (row == rows.end()) {
        // A key the earlier specs lack goes after its predecessor in this spec, so that
        // "train.seed" stands among the other train.* keys, not at the end. Specs are small:
        // the linear searches cost nothing a person could notice.
        auto at = previous.empty() ? rows.begin() : rowOf(previous);
        if (at != rows.end() && !previous.empty()) ++at;
        row = rows.insert(at, {key, std::vector<std::string>(specs.size()),
                               std::vector<bool>(specs.size(), false), false});
      }
      row->values[s] = value;
      row->present[s] = true;
      previous = key;
    }
  }
  for (SpecDiffRow& row : rows) {
    for (size_t s = 1; s < specs.size(); ++s) {
      if (row.present[s] != row.present[0] || row.values[s] != row.values[0]) row.differs = true;
    }
  }
  return rows;
}

}  // namespace ringmaster::gui

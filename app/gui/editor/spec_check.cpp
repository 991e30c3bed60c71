#include "editor/spec_check.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <regex>
#include <sstream>

#include "ringmaster/train/config.h"

namespace ringmaster::gui {
namespace {

job::SpecDiagnostic nativeDiagnostic(const std::string& line, const std::string& file) {
  static const std::regex kLine(R"(^([^ :]+)(?: \(line (\d+)\))?: ([\s\S]*)$)");
  job::SpecDiagnostic d;
  d.file = file;
  std::smatch match;
  if (std::regex_match(line, match, kLine)) {
    d.field = match[1].str();
    if (match[2].matched) d.line = std::stoi(match[2].str());
    d.message = match[3].str();
  } else {
    d.field = "native";
    d.message = line;
  }
  return d;
}

}  // namespace

std::vector<job::SpecDiagnostic> unknownPlacementAgents(std::string_view text,
                                                        const std::string& file,
                                                        const std::vector<std::string>& agents) {
  std::vector<job::SpecDiagnostic> out;
  YAML::Node placement;
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    if (root.IsMap()) placement = root["placement"];
  } catch (const YAML::Exception&) {
    return out;
  }
  if (!placement.IsSequence()) return out;
  std::string known;
  for (const std::string& a : agents) known += (known.empty() ? "" : ", ") + a;
  for (size_t i = 0; i < placement.size(); ++i) {
    const YAML::Node agent = placement[i].IsMap() ? placement[i]["agent"] : YAML::Node();
    if (!agent.IsScalar() || agent.Scalar().empty()) continue;
    if (std::find(agents.begin(), agents.end(), agent.Scalar()) != agents.end()) continue;
    job::SpecDiagnostic d;
    d.file = file;
    d.line = agent.Mark().line + 1;
    d.column = agent.Mark().column + 1;
    d.field = "placement[" + std::to_string(i) + "].agent";
    d.message = "unknown agent '" + agent.Scalar() + "'";
    d.hint = known.empty() ? "the cluster file has no agents" : "the cluster file has " + known;
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<job::SpecDiagnostic> checkSpecText(std::string_view text, const std::string& file) {
  job::SpecParseResult parsed = job::parseJobSpec(text, file);
  if (!parsed.ok()) return std::move(parsed.errors);
  if (parsed.spec->launcher != job::Launcher::kNative) return {};
  const auto config = train::parseNativeConfig(parsed.spec->native_yaml, parsed.spec->native_line,
                                               parsed.spec->world_size);
  if (config.isOk()) return {};
  std::vector<job::SpecDiagnostic> out;
  std::istringstream lines(config.status().message());
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty()) out.push_back(nativeDiagnostic(line, file));
  }
  return out;
}

std::string problemLine(const job::SpecDiagnostic& d) {
  std::string out;
  if (d.line > 0) out += "line " + std::to_string(d.line) + ": ";
  if (!d.field.empty()) out += d.field + ": ";
  out += d.message;
  if (!d.hint.empty()) out += " (" + d.hint + ")";
  return out;
}

}  // namespace ringmaster::gui

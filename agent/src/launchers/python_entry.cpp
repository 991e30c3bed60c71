#include "python_entry.h"

#include <filesystem>
#include <fstream>
#include <regex>

#include "ringmaster/job/spec.h"

namespace ringmaster::agent {
namespace {

std::string baseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// "python3.11" -> "3.11"; empty when the name carries no version.
std::string versionOfName(const std::string& name) {
  static const std::regex kVersioned("python([0-9]+\\.[0-9]+)");
  std::smatch m;
  return std::regex_match(name, m, kVersioned) ? m[1].str() : "";
}

// A venv's pyvenv.cfg (beside its bin/) says which Python made it: "version = 3.11.2" (venv) or
// "version_info = 3.11.2.final.0" (virtualenv).
std::string versionOfVenv(const std::filesystem::path& interpreter) {
  std::ifstream cfg(interpreter.parent_path().parent_path() / "pyvenv.cfg");
  static const std::regex kLine("\\s*version(_info)?\\s*=\\s*([0-9]+\\.[0-9]+(\\.[0-9]+)?).*");
  std::string line;
  std::smatch m;
  while (std::getline(cfg, line)) {
    if (std::regex_match(line, m, kLine)) return m[2].str();
  }
  return "";
}

}  // namespace

std::vector<std::string> withPythonInterpreter(std::vector<std::string> argv) {
  if (!argv.empty() && job::isPythonScript(argv[0])) argv.insert(argv.begin(), "python3");
  return argv;
}

bool runsPython(const std::vector<std::string>& argv) {
  if (argv.empty()) return false;
  return baseName(argv[0]).rfind("python", 0) == 0 ||
         (argv.size() > 1 && job::isPythonScript(argv[1]));
}

size_t pythonEntryIndex(const std::vector<std::string>& argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    if (argv[i] == "-m") return i + 1 < argv.size() ? i + 1 : argv.size();
    if (argv[i] == "-c" || argv[i] == "-") return argv.size();  // no entry point to name
    // Options that take a value: -W arg, -X opt, -Q (Python 2).
    if (argv[i] == "-W" || argv[i] == "-X") {
      ++i;
      continue;
    }
    if (!argv[i].empty() && argv[i][0] == '-') continue;
    return i;
  }
  return argv.size();
}

std::string describeInterpreter(const std::string& resolved) {
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::canonical(resolved, ec);
  std::string text = resolved;
  // Only where a link leads somewhere else ("/usr/bin//python3" is no news).
  if (!ec && target != std::filesystem::path(resolved).lexically_normal()) {
    text += " -> " + target.string();
  }
  std::string version = versionOfName(baseName(ec ? resolved : target.string()));
  if (version.empty()) version = versionOfName(baseName(resolved));
  if (version.empty()) version = versionOfVenv(resolved);
  return text + (version.empty() ? ", version unknown" : ", Python " + version);
}

std::optional<std::string> missingFrameworkReason(const std::vector<std::string>& tail,
                                                  const std::string& module,
                                                  const std::string& interpreter) {
  // Only the framework itself missing: "No module named 'torch.foo'" is a script's bad import.
  const std::string missing = "ModuleNotFoundError: No module named '" + module + "'";
  for (const std::string& line : tail) {
    if (line.find(missing) == std::string::npos) continue;
    return "interpreter " + (interpreter.empty() ? std::string("python3") : interpreter) +
           " has no " + module + " (" + missing +
           "): name one that has it with python: in the spec";
  }
  return std::nullopt;
}

}  // namespace ringmaster::agent

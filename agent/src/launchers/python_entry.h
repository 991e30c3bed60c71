#pragma once
// Python entry points: a `.py` first word runs under an interpreter, as torchrun and DeepSpeed's
// launcher run scripts with their own. The client puts the spec's `python:` in front of the
// script; otherwise the frameworks' launchers here put `python3`, found on the job's own PATH
// (env: PATH, else the agent's) when the rank starts. What ran is recorded with the launch.
//
// Thread-safety: pure functions.

#include <optional>
#include <string>
#include <vector>

namespace ringmaster::agent {

// `argv` with `python3` in front when its first word is a .py script.
std::vector<std::string> withPythonInterpreter(std::vector<std::string> argv);

// Whether argv[0] is a Python interpreter: its name starts with "python" (python, python3,
// python3.11), or the next word is a .py script.
bool runsPython(const std::vector<std::string>& argv);

// Index of the entry point in an argv that runs Python: the script, or the module after -m,
// skipping the interpreter's own options ("python3 -u train.py" -> 2). argv.size() when none.
size_t pythonEntryIndex(const std::vector<std::string>& argv);

// "/usr/bin/python3 -> /usr/bin/python3.11, Python 3.11": `resolved` (the interpreter as found on
// the job's PATH), the file it leads to when that differs, and the version its name or its
// venv's pyvenv.cfg gives ("version unknown" otherwise). The interpreter is never run: the agent
// may be root and the interpreter the job's.
std::string describeInterpreter(const std::string& resolved);

// "interpreter /usr/bin/python3 -> /usr/bin/python3.11, Python 3.11 has no torch
// (ModuleNotFoundError: No module named 'torch'): name one that has it with python: in the
// spec" when `tail` shows the framework's top-level module missing; nullopt otherwise.
std::optional<std::string> missingFrameworkReason(const std::vector<std::string>& tail,
                                                  const std::string& module,
                                                  const std::string& interpreter);

}  // namespace ringmaster::agent

#pragma once
// checkSpecText(): the diagnostics ringmasterctl prints for a spec (see app/ctl/submit_command.cpp
// checkSpec): parseJobSpec's, and when the spec itself is fine and its launcher is native, the
// native trainer's (train::parseNativeConfig at the spec's line offset). The trainer reports
// "FIELD (line N): MESSAGE" lines; each becomes a SpecDiagnostic with that field and line, the
// message kept word for word.
//
// Thread safety: pure function.

#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/job/spec.h"

namespace ringmaster::gui {

std::vector<job::SpecDiagnostic> checkSpecText(std::string_view text, const std::string& file);

// The placement entries of `text` whose agent is not one of `agents` (the cluster file's), read
// leniently: they are named even while the spec has other problems, which hide the cluster's
// own check until they are fixed. Nothing when the text is not YAML.
std::vector<job::SpecDiagnostic> unknownPlacementAgents(std::string_view text,
                                                        const std::string& file,
                                                        const std::vector<std::string>& agents);

// "line 12: native.optimizer.lr: expected a positive number, got -1 (did you mean ...)": how the
// editor lists a problem (the file is the one being edited, so it is left out).
std::string problemLine(const job::SpecDiagnostic& diagnostic);

}  // namespace ringmaster::gui

#pragma once
// How the editor writes scalars into the YAML it generates. Strings are written plain when YAML
// would read them back as the same string and quoted otherwise; numeric fields keep what the
// person typed (even "-1" or "many") so that core's validator judges exactly that.
//
// Thread safety: pure functions.

#include <string>
#include <string_view>

namespace ringmaster::gui {

// A string value: plain when safe, else single-quoted (double-quoted with escapes when it holds
// control characters). Anything YAML would read as a number, bool or null is quoted.
std::string yamlString(std::string_view text);

// A value typed into a numeric or choice field: written as typed when it is a safe plain scalar
// (so "0.05", "-1" and "many" stay untyped for the validator to read), else like yamlString.
std::string yamlValue(std::string_view text);

// A mapping key: plain when it is a simple name, else quoted.
std::string yamlKey(std::string_view text);

}  // namespace ringmaster::gui

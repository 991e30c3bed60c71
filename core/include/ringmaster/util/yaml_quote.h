#pragma once
// Writing YAML by hand (cluster files, job specs from the editor): a string as a double-quoted
// scalar that any YAML reader gives back unchanged, whatever it holds (Z85 keys use [ ] { } : #
// & * ! % @, which mean something to YAML unquoted).
//
// Thread safety: pure.

#include <string>
#include <string_view>

namespace ringmaster {

// "..." with the quote, the backslash and control characters escaped.
std::string yamlDoubleQuoted(std::string_view text);

}  // namespace ringmaster

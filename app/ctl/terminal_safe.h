#pragma once
// Text a job wrote (its ranks' output, a failure's cause and last lines, metric names) made safe
// to print on a terminal. On a shared cluster a tenant's job must not reach the terminal of the
// person who reads `status` or `submit --follow`: an escape sequence could retitle the window,
// erase lines and print a fake "ok: job succeeded" under their own command. Control characters
// (C0 but tab, DEL, and C1 whether UTF-8-encoded or a stray byte) are shown as escapes ("\e[2J"
// reads as text); every other byte, UTF-8 text included, is kept.
//
// `logs --rank N` (one rank, no prefix) stays raw: it is the rank's own bytes, for a file or a
// pipe, as `cat` would give them.

#include <string>
#include <string_view>

namespace ringmaster::ctl {

std::string terminalSafe(std::string_view text);

}  // namespace ringmaster::ctl

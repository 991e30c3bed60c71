#pragma once
// Every connection, pipe and libzmq mailbox takes a descriptor. The usual soft limit (1,024 in a
// login shell or a desktop session) is used up by an agent's thousand idle client connections,
// or by a client session watching a hundred agents (several descriptors each); the hard limit
// (524,288 on Debian 12) is the process's to take. Children inherit the raised soft limit (the
// agent sets its ranks' own, rank_confinement.h).

namespace ringmaster {

// Raises this process's soft open-file limit to its hard limit (nothing when it cannot).
void raiseOpenFileLimit();

}  // namespace ringmaster

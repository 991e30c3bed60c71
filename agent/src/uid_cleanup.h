#pragma once
// What a uid of --job-uids leaves on the host besides its job's directories, found and removed:
// its processes, its files in the shared temporary directories (/tmp, /var/tmp, /dev/shm,
// /dev/mqueue, /run/lock), its System V IPC objects (shared memory, message queues, semaphores)
// and the keys in its user keyrings (which outlive its processes). A uid
// goes to the next job only with none of them (job_identity.h), so that a tenant finds nothing
// of the last one; and a uid some other user of the host holds is never touched.
//
// Thread-safe: stateless (reads /proc, walks the directories each call).

#include <sys/types.h>

#include <string>
#include <vector>

#include "ringmaster/util/result.h"

namespace ringmaster::agent {

// The shared directories searched and cleaned (each skipped when it does not exist).
const std::vector<std::string>& sharedTempDirs();

// Why `uid` is in use on this host ("a process runs as it (pid 412)", "/tmp/x is its"), or ""
// when nothing is: no process, no file in the shared temporary directories, no IPC object.
std::string uidInUse(uid_t uid);

// SIGKILL to every process running as `uid` (a child that becomes `uid` and kills -1, the only
// way that cannot miss a process forked meanwhile). Returns once the child is reaped.
void killEveryProcessOf(uid_t uid);

// Empties `uid`'s user and user-session keyrings (a child that becomes `uid` clears them): a key
// a job added there would be readable by the next job given the uid.
void clearKeyringsOf(uid_t uid);

// Ends `uid`'s processes, removes what it owns in the shared temporary directories and its IPC
// objects, and empties its keyrings. An error names what could not be removed.
Status removeEverythingOf(uid_t uid);

// Removes what `uid` owns under `roots` (removeEverythingOf's part in the shared directories),
// never following a link, however the tree changes meanwhile; the first error, "" when none.
std::string removeFilesOf(uid_t uid, const std::vector<std::string>& roots);

}  // namespace ringmaster::agent

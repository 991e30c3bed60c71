#pragma once
// Whether a history file's pages are sound. Pages SQLite cannot read (a disk fault, a file copied
// while it was written) fail only the queries that touch them: `runs` listed the jobs of a file
// whose other pages were damaged, and `sync` wrote into it, with exit 0 and no word. PRAGMA
// quick_check reads every page (0.7 s for a 200 MB file, 2.3 s from a cold cache): too slow for
// every command, so its verdict is kept beside the file (history.db-checked) and taken again
// when it is an hour old, when the file was replaced (another inode: a copy put in its place),
// or when a file found damaged has changed since (repaired in place). A query that meets damage
// marks the file at once.

#include <sqlite3.h>

#include <string>

namespace ringmaster::store {

// The damage of the history file `db` has open: one sentence naming the file, what SQLite found
// and how to recover what is readable; "" when it is sound. Checked (or the kept verdict read)
// once per file in a process; damagedHistories() (reader.h) lists what it found.
std::string checkedDamage(sqlite3* db);

// A statement of `db` met damage (SQLITE_CORRUPT, SQLITE_NOTADB): the file is damaged from now
// on, in this process and (kept beside it) for the next, without waiting for the next check.
void noteDamage(sqlite3* db, const std::string& detail);

}  // namespace ringmaster::store

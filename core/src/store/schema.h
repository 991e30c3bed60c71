#pragma once
// The history file's schema: an ordered list of migrations, the version kept in PRAGMA
// user_version.

#include <string>

#include "ringmaster/util/result.h"
#include "store/sqlite_util.h"

namespace ringmaster::store {

// The schema version this build writes. Older files are migrated at open; newer ones are refused.
int currentSchemaVersion();

// Brings the database to currentSchemaVersion(): applies each pending migration in its own
// IMMEDIATE transaction together with the new user_version, so a crash leaves the file at a
// complete version. A file written by a newer build gives kUnsupportedVersion. `path` only
// names the file in messages.
Status migrate(Connection& db, const std::string& path);

}  // namespace ringmaster::store

#pragma once
// Small files the agent keeps (the journal's id, the ledger of uids it gave out) written so that
// they are whole on disk or not there: a temporary file, fsynced, then renamed over the old one.

#include <string>

#include "ringmaster/util/result.h"

namespace ringmaster::agent {

Status writeFileDurably(const std::string& path, const std::string& content);

}  // namespace ringmaster::agent

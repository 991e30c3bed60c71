#pragma once
// The client-side history, whole: its rows (rows.h), reading it (reader.h), its one writer in a
// process (writer.h) and the thread that owns that writer (batch_writer.h).

#include "ringmaster/store/batch_writer.h"
#include "ringmaster/store/reader.h"
#include "ringmaster/store/rows.h"
#include "ringmaster/store/writer.h"

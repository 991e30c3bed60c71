#pragma once
// TORCHELASTIC_ERROR_FILE, as torchrun sets it: a file per rank where PyTorch's
// `torch.distributed.elastic.multiprocessing.errors.record` writes the exception that ended the
// rank ({"message": {"message": "ValueError: ...", "extraInfo": {"py_callstack": ...}}}). The
// agent makes it empty before the rank starts (the attempt directory is not the rank's to write)
// and reads it when the rank fails: its message is the failure's error, the root cause a person
// reads first, as torchrun prints it.

#include <optional>
#include <string>

namespace ringmaster::agent {

// The exception message `path` holds: "ValueError: bad batch" (at most 2,000 characters);
// nullopt when the file is missing, empty, a link, too large (over 1 MB) or not such JSON.
std::optional<std::string> readTorchErrorFile(const std::string& path);

}  // namespace ringmaster::agent

#pragma once
// A shared library opened on first use with dlopen: programs that link against it through a
// forwarding shim (nccl_loader.cpp, cublas_loader.cpp) start and run on hosts that lack it, and
// fail only when the library is actually needed, with a message that names it.
//
// Thread-safe: the library is opened once (std::call_once); symbol() may be called from any thread.

#include <mutex>
#include <string>

namespace ringmaster::util {

class LazyLibrary {
 public:
  // `soname` is what dlopen looks for (LD_LIBRARY_PATH, the program's RPATH, ldconfig's cache);
  // `what` names it in error messages, e.g. "NCCL".
  LazyLibrary(const char* soname, const char* what) : soname_(soname), what_(what) {}

  // The symbol's address, or nullptr when the library or the symbol is missing.
  void* symbol(const char* name);
  // Why symbol() returned nullptr: "NCCL is not available on this host (libnccl.so.2: ...)".
  const std::string& error();

 private:
  void open();

  const char* soname_;
  const char* what_;
  std::once_flag opened_;
  void* handle_ = nullptr;
  std::string error_;
};

}  // namespace ringmaster::util

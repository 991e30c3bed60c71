#include "util/lazy_library.h"

#include <dlfcn.h>

namespace ringmaster::util {

void LazyLibrary::open() {
  std::call_once(opened_, [this] {
    handle_ = ::dlopen(soname_, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* why = ::dlerror();
      error_ = std::string(what_) + " is not available on this host (" + (why ? why : soname_) +
               "); install it, or point LD_LIBRARY_PATH at it";
    }
  });
}

void* LazyLibrary::symbol(const char* name) {
  open();
  return handle_ != nullptr ? ::dlsym(handle_, name) : nullptr;
}

const std::string& LazyLibrary::error() {
  open();
  return error_;
}

}  // namespace ringmaster::util

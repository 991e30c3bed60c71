#include "ringmaster/util/open_files.h"

#include <sys/resource.h>

namespace ringmaster {

void raiseOpenFileLimit() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= files.rlim_max) return;
  files.rlim_cur = files.rlim_max;
  (void)::setrlimit(RLIMIT_NOFILE, &files);
}

}  // namespace ringmaster

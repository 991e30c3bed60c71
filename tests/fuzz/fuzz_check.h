#pragma once
// A fuzz target's assertion: a failed check aborts, which libFuzzer (and the corpus replay)
// reports as a crash with the input that caused it.
#include <cstdio>
#include <cstdlib>

#define RM_FUZZ_CHECK(cond)                                                         \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

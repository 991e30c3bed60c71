#pragma once
// Large arrays of training data backed by 2 MB pages where the kernel allows it.

#include <sys/mman.h>

#include <cstdint>
#include <vector>

namespace ringmaster::train {

// Gives `v` room for `count` elements, untouched, and asks for transparent huge pages over it
// (with THP in "madvise" mode, Debian's default, only asked-for memory gets them). Fashion-MNIST's
// 188 MB of floats faulted in as 47,000 4 KB pages took about 0.5 s of a rank's start on a VM
// where a fault costs ~12 us; the batches' random rows then miss the TLB less too. A kernel
// without THP ignores the advice.
template <typename T>
void reserveLargePages(std::vector<T>* v, size_t count) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  v->reserve(count);
  const auto begin = (reinterpret_cast<uintptr_t>(v->data()) + kHuge - 1) & ~(kHuge - 1);
  const auto end = reinterpret_cast<uintptr_t>(v->data() + v->capacity()) & ~(kHuge - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace ringmaster::train

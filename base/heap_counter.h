// base/heap_counter.h: counts heap allocations, in a build made to (the `allocs` preset,
// NUMADIR_COUNT_ALLOCATIONS=ON), for perf/alloc_bench.py's allocations per auth.
//
// Such a build replaces malloc, calloc, realloc, the aligned allocations and free for the whole
// process (operator new, LMDB and OpenSSL allocate through them), forwarding to glibc's and
// counting every call that may allocate. Not for sanitizer builds (they replace malloc
// themselves) and not for production: the count is one shared atomic.
#pragma once

#include <cstdint>

namespace numadir {

// Returns: whether this build counts (NUMADIR_COUNT_ALLOCATIONS).
bool heap_counting();
// Returns: the allocation calls made so far by every thread; 0 in a build that does not count.
std::uint64_t heap_allocations();

}  // namespace numadir

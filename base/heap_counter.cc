// base/heap_counter.cc: see heap_counter.h.
#include "base/heap_counter.h"

#ifdef NUMADIR_COUNT_ALLOCATIONS

#include <atomic>
#include <cerrno>
#include <cstddef>

// glibc's own entry points, which its malloc, free etc. are aliases of.
extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* pointer, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void* __libc_valloc(std::size_t size);
void* __libc_pvalloc(std::size_t size);
void __libc_free(void* pointer);
}

namespace {

std::atomic<std::uint64_t> allocations{0};

void count() { allocations.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

extern "C" {

void* malloc(std::size_t size) {
  count();
  return __libc_malloc(size);
}

void* calloc(std::size_t count_of, std::size_t size) {
  count();
  return __libc_calloc(count_of, size);
}

void* realloc(void* pointer, std::size_t size) {
  count();
  return __libc_realloc(pointer, size);
}

void* memalign(std::size_t alignment, std::size_t size) {
  count();
  return __libc_memalign(alignment, size);
}

void* aligned_alloc(std::size_t alignment, std::size_t size) {
  count();
  return __libc_memalign(alignment, size);
}

int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) {
    return EINVAL;
  }
  count();
  void* pointer = __libc_memalign(alignment, size);
  if (pointer == nullptr && size != 0) {
    return ENOMEM;
  }
  *out = pointer;
  return 0;
}

void* valloc(std::size_t size) {
  count();
  return __libc_valloc(size);
}

void* pvalloc(std::size_t size) {
  count();
  return __libc_pvalloc(size);
}

void free(void* pointer) { __libc_free(pointer); }

}  // extern "C"

namespace numadir {

bool heap_counting() { return true; }
std::uint64_t heap_allocations() { return allocations.load(std::memory_order_relaxed); }

}  // namespace numadir

#else

namespace numadir {

bool heap_counting() { return false; }
std::uint64_t heap_allocations() { return 0; }

}  // namespace numadir

#endif

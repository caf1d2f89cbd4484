// base/check.h: invariant checks.
//
// NUMADIR_CHECK(cond, msg)  always on: aborts with file, line, condition and message. For what
//                           cannot happen after startup (e.g. epoll_create1 failing with valid
//                           arguments). Never for what a client, the disk or the config can cause.
// NUMADIR_DCHECK(cond, msg) debug builds only (compiled out under NDEBUG, but the condition is
//                           still type-checked).
//
// Thread contract: usable from any thread; the abort path writes to stderr with one call.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace numadir::detail {

[[noreturn]] inline void check_failed(const char* file, int line, const char* condition,
                                      const char* message) {
  std::fprintf(stderr, "%s:%d: check failed: %s: %s\n", file, line, condition, message);
  std::fflush(stderr);
  std::abort();
}

}  // namespace numadir::detail

#define NUMADIR_CHECK(cond, msg)                                         \
  do {                                                                   \
    if (!(cond)) [[unlikely]] {                                          \
      ::numadir::detail::check_failed(__FILE__, __LINE__, #cond, (msg)); \
    }                                                                    \
  } while (false)

#ifdef NDEBUG
#define NUMADIR_DCHECK(cond, msg) \
  do {                            \
    if (false) {                  \
      (void)(cond);               \
      (void)(msg);                \
    }                             \
  } while (false)
#else
#define NUMADIR_DCHECK(cond, msg) NUMADIR_CHECK(cond, msg)
#endif

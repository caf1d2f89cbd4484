// base/thread_annotations.h: clang thread-safety annotation macros, and Mutex / MutexLock, the
// annotated lock types they need (libstdc++'s std::mutex carries no annotations).
//
// The macros expand to clang's thread-safety attributes, and to nothing on GCC. The `clang`
// and `fuzz` presets build with -Wthread-safety -Werror, so a field marked
// NUMADIR_GUARDED_BY(mu_) touched without mu_ held fails that build.
//
// Thread contract: Mutex is a std::mutex; any thread may lock it. MutexLock is a scoped lock
// owned by the thread that made it.
#pragma once

#include <mutex>

#if defined(__clang__)
#define NUMADIR_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define NUMADIR_THREAD_ANNOTATION(x)
#endif

#define NUMADIR_CAPABILITY(x) NUMADIR_THREAD_ANNOTATION(capability(x))
#define NUMADIR_SCOPED_CAPABILITY NUMADIR_THREAD_ANNOTATION(scoped_lockable)
#define NUMADIR_GUARDED_BY(x) NUMADIR_THREAD_ANNOTATION(guarded_by(x))
#define NUMADIR_PT_GUARDED_BY(x) NUMADIR_THREAD_ANNOTATION(pt_guarded_by(x))
#define NUMADIR_REQUIRES(...) NUMADIR_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define NUMADIR_EXCLUDES(...) NUMADIR_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define NUMADIR_ACQUIRE(...) NUMADIR_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define NUMADIR_RELEASE(...) NUMADIR_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define NUMADIR_TRY_ACQUIRE(...) NUMADIR_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define NUMADIR_RETURN_CAPABILITY(x) NUMADIR_THREAD_ANNOTATION(lock_returned(x))
#define NUMADIR_NO_THREAD_SAFETY_ANALYSIS NUMADIR_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace numadir {

// A std::mutex the thread-safety analysis knows about. Non-copyable, non-movable.
class NUMADIR_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() NUMADIR_ACQUIRE() { mu_.lock(); }
  void unlock() NUMADIR_RELEASE() { mu_.unlock(); }
  [[nodiscard]] bool try_lock() NUMADIR_TRY_ACQUIRE(true) { return mu_.try_lock(); }

  // For std::condition_variable_any and similar; the analysis cannot follow the handle.
  std::mutex& native_handle_for_condvar() { return mu_; }

 private:
  std::mutex mu_;
};

// Holds `mu` for the enclosing scope.
class NUMADIR_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) NUMADIR_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() NUMADIR_RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

}  // namespace numadir

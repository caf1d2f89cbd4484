// base/recycler.h: keeps objects that are expensive to make (ones that own grown buffers) for
// reuse, so a steady stream of short-lived ones allocates nothing.
//
// Objects are taken on one thread and often given back on another (a request decoded by a
// listener, destroyed by the worker that answered it), so each thread keeps a small cache (a
// Cache, which the thread's own state owns and passes in) and the caches trade batches through
// one shared depot under a mutex: a thread that only takes refills from it, one that only gives
// spills into it, one lock per kBatch objects. What the depot cannot keep (more than
// `max_kept`) is destroyed.
//
// Thread contract: take() and give() from any thread, each with a Cache that only the calling
// thread uses; give() without one (rare paths that have no thread state at hand) from any
// thread. A Cache's objects are destroyed with it.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "base/thread_annotations.h"

namespace numadir {

template <typename T>
class Recycler {
 public:
  // Objects moved between a thread's cache and the depot at once.
  static constexpr std::size_t kBatch = 16;

  // One thread's objects, taken and given without the lock. Owner: the thread that passes it.
  class Cache {
   public:
    Cache() { kept_.reserve(kCacheSize); }
    Cache(const Cache&) = delete;
    Cache& operator=(const Cache&) = delete;

   private:
    friend class Recycler;
    std::vector<std::unique_ptr<T>> kept_;
  };

  explicit Recycler(std::size_t max_kept) : max_kept_(max_kept) { depot_.reserve(max_kept); }
  Recycler(const Recycler&) = delete;
  Recycler& operator=(const Recycler&) = delete;

  // Returns: a kept object (as it was given back), or a new T.
  std::unique_ptr<T> take(Cache& cache) {
    std::vector<std::unique_ptr<T>>& kept = cache.kept_;
    if (kept.empty()) {
      MutexLock lock(mu_);
      const std::size_t n = depot_.size() < kBatch ? depot_.size() : kBatch;
      for (std::size_t i = 0; i < n; ++i) {
        kept.push_back(std::move(depot_.back()));
        depot_.pop_back();
      }
    }
    if (kept.empty()) {
      return std::make_unique<T>();
    }
    std::unique_ptr<T> object = std::move(kept.back());
    kept.pop_back();
    return object;
  }

  // Keeps `object` for a later take(), or destroys it when the depot is full.
  void give(Cache& cache, std::unique_ptr<T> object) {
    std::vector<std::unique_ptr<T>>& kept = cache.kept_;
    if (kept.size() == kCacheSize) {
      std::vector<std::unique_ptr<T>> unkept;  // Destroyed unlocked.
      {
        MutexLock lock(mu_);
        for (std::size_t i = 0; i < kBatch; ++i) {
          if (depot_.size() < max_kept_) {
            depot_.push_back(std::move(kept.back()));
          } else {
            unkept.push_back(std::move(kept.back()));
          }
          kept.pop_back();
        }
      }
    }
    kept.push_back(std::move(object));
  }

  // As give(cache, object), straight into the depot under the lock: for paths too rare to keep
  // a cache for.
  void give(std::unique_ptr<T> object) {
    {
      MutexLock lock(mu_);
      if (depot_.size() < max_kept_) {
        depot_.push_back(std::move(object));
        return;
      }
    }
    // `object` is destroyed unlocked.
  }

 private:
  static constexpr std::size_t kCacheSize = 2 * kBatch;

  const std::size_t max_kept_;
  Mutex mu_;
  std::vector<std::unique_ptr<T>> depot_ NUMADIR_GUARDED_BY(mu_);
};

}  // namespace numadir

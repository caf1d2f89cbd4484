// threadpool/bounded_queue.h: a fixed-capacity multi-producer multi-consumer queue of owned
// items on Boost.Lockfree (no lock, no allocation after construction).
//
// Thread contract: try_push / try_pop may be called from any thread. Construct and destroy the
// queue only while no other thread uses it; the destructor deletes items still queued.
#pragma once

#include <boost/lockfree/queue.hpp>
#include <cstddef>
#include <memory>

#include "base/check.h"

namespace numadir::threadpool {

template <typename Item>
class BoundedQueue {
 public:
  // Boost.Lockfree's fixed-size queue indexes its nodes with 16 bits.
  static constexpr std::size_t kMaxCapacity = 65000;

  // Requires: 0 < capacity <= kMaxCapacity.
  explicit BoundedQueue(std::size_t capacity) : queue_(capacity) {
    NUMADIR_CHECK(capacity > 0 && capacity <= kMaxCapacity, "BoundedQueue capacity out of range");
  }
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;
  ~BoundedQueue() {
    Item* item = nullptr;
    while (queue_.pop(item)) {
      delete item;
    }
  }

  // Returns false if full, and `item` stays with the caller. On success `item` is left empty.
  [[nodiscard]] bool try_push(std::unique_ptr<Item>& item) {
    if (!queue_.bounded_push(item.get())) {
      return false;
    }
    (void)item.release();  // The queue owns it now.
    return true;
  }

  // Returns nullptr if empty. Never blocks.
  std::unique_ptr<Item> try_pop() {
    Item* item = nullptr;
    if (!queue_.pop(item)) {
      return nullptr;
    }
    return std::unique_ptr<Item>(item);
  }

 private:
  boost::lockfree::queue<Item*, boost::lockfree::fixed_sized<true>> queue_;
};

}  // namespace numadir::threadpool

// backend/change_feed.cc: subscribers and the delivery of change records.
#include "backend/change_feed.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace numadir::backend {

struct ChangeSubscription::Slot {
  ChangeCallback callback;
  bool removed = false;  // Unsubscribed from inside a delivery; erased when it ends.
};

const char* change_kind_name(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kAdd:
      return "add";
    case ChangeKind::kDelete:
      return "delete";
    case ChangeKind::kModify:
      return "modify";
    case ChangeKind::kRename:
      return "rename";
  }
  return "unknown";
}

ChangeSubscription::~ChangeSubscription() { feed_.unsubscribe(slot_); }

ChangeFeed::ChangeFeed() = default;

ChangeFeed::~ChangeFeed() {
  MutexLock lock(mu_);
  NUMADIR_CHECK(slots_.empty(), "a change subscription outlived its Directory");
}

std::unique_ptr<ChangeSubscription> ChangeFeed::subscribe(ChangeCallback callback)
    NUMADIR_NO_THREAD_SAFETY_ANALYSIS {
  NUMADIR_CHECK(callback != nullptr, "subscribe_changes needs a callback");
  auto slot = std::make_unique<ChangeSubscription::Slot>();
  slot->callback = std::move(callback);
  ChangeSubscription::Slot* raw = slot.get();
  // From inside a callback mu_ is already held by this thread (publish() delivers with it):
  // the new slot goes to the end, past the slots the current delivery walks.
  const bool delivering = delivering_.load(std::memory_order_relaxed) == std::this_thread::get_id();
  if (!delivering) {
    mu_.lock();
  }
  slots_.push_back(std::move(slot));
  const std::uint64_t start = last_sequence_;
  if (!delivering) {
    mu_.unlock();
  }
  return std::unique_ptr<ChangeSubscription>(new ChangeSubscription(*this, raw, start));
}

void ChangeFeed::unsubscribe(ChangeSubscription::Slot* slot) NUMADIR_NO_THREAD_SAFETY_ANALYSIS {
  if (delivering_.load(std::memory_order_relaxed) == std::this_thread::get_id()) {
    // Inside a callback (maybe this very slot's): the delivery erases it when it ends.
    slot->removed = true;
    return;
  }
  MutexLock lock(mu_);
  auto it = std::find_if(slots_.begin(), slots_.end(),
                         [slot](const auto& candidate) { return candidate.get() == slot; });
  NUMADIR_CHECK(it != slots_.end(), "unsubscribing a subscription the feed does not hold");
  slots_.erase(it);
}

void ChangeFeed::publish(ChangeRecord& record) {
  MutexLock lock(mu_);
  record.sequence = ++last_sequence_;
  if (slots_.empty()) {
    return;
  }
  delivering_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  // By index: a callback may subscribe (appending) while the walk goes on. Slots added by
  // this delivery are not given this record (they start after it).
  const std::size_t count = slots_.size();
  for (std::size_t i = 0; i < count; ++i) {
    ChangeSubscription::Slot& slot = *slots_[i];
    if (!slot.removed) {
      slot.callback(record);
    }
  }
  delivering_.store(std::thread::id(), std::memory_order_relaxed);
  std::erase_if(slots_, [](const auto& slot) { return slot->removed; });
}

std::uint64_t ChangeFeed::last_sequence() const {
  MutexLock lock(mu_);
  return last_sequence_;
}

}  // namespace numadir::backend

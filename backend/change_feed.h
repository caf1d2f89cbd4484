// backend/change_feed.h: the change feed: every change the directory's writer commits, as an
// ordered ChangeRecord, delivered to subscribers (persistent searches, a replication provider).
//
// Each committed change gets the next sequence number (1, 2, ... in commit order, per open
// Directory: numbers start again at 1 when the directory is opened again; the CSN is the order
// that lasts). A subscriber sees every change committed after it subscribed exactly once, in
// commit order, and nothing of a job that failed or whose commit failed.
//
// Thread contract: subscribe() and ~ChangeSubscription may be called from any thread, the
// writer's included (from inside a callback too). Callbacks run on the writer thread, one
// record at a time in sequence order, after the commit of the record's change is durable (per
// Durability) and before the completion of the job that made it; each must be cheap and must
// not block (copy what it needs into a bounded queue of its own), and must not submit to the
// writer. Once ~ChangeSubscription has returned, its callback is not running and never runs
// again (when it is destroyed from inside its own callback, that call is the last). Destroy
// every subscription before the Directory.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/thread_annotations.h"

namespace numadir::backend {

enum class ChangeKind : std::uint8_t { kAdd, kDelete, kModify, kRename };

// Returns: "add", "delete", "modify" or "rename".
const char* change_kind_name(ChangeKind kind);

struct ChangeRecord {
  std::uint64_t sequence = 0;  // 1, 2, ... in commit order.
  std::uint64_t entry_id = 0;  // The entry's id (for a delete: the id it had).
  ChangeKind kind = ChangeKind::kAdd;
  // The entry's DN: as added (add), as stored before the change (delete, modify, rename).
  std::string dn;
  std::string new_dn;  // Rename only: the DN it has now.
  // The CSN the change was given (entryCSN of the entry, if not deleted). A replicated change's:
  // the entry's entryCSN as its provider sent it; a replicated delete's, the batch's cookie CSN
  // (ReplicaChange::cookie_csn), or the contextCSN as it stood when the batch had none.
  std::string csn;
  // The entry's entryUUID in its string form (RFC 4530), for every kind (a delete: the deleted
  // entry's); empty when the entry has none (a schema without entryUUID).
  std::string entry_uuid;
  bool internal = false;  // UpdateContext::internal of the update.
};

using ChangeCallback = std::function<void(const ChangeRecord&)>;

class ChangeFeed;

// A registered subscriber; destroying it unsubscribes (see the thread contract above).
class ChangeSubscription {
 public:
  ChangeSubscription(const ChangeSubscription&) = delete;
  ChangeSubscription& operator=(const ChangeSubscription&) = delete;
  ~ChangeSubscription();

  // Returns: the sequence number of the last change published before this subscription
  //   began: it sees exactly the records whose sequence is greater.
  std::uint64_t start_sequence() const { return start_sequence_; }

 private:
  friend class ChangeFeed;
  struct Slot;
  ChangeSubscription(ChangeFeed& feed, Slot* slot, std::uint64_t start_sequence)
      : feed_(feed), slot_(slot), start_sequence_(start_sequence) {}

  ChangeFeed& feed_;
  Slot* const slot_;  // Owned by feed_.
  const std::uint64_t start_sequence_;
};

// The subscribers of one Directory and the sequence counter; owned by its Writer.
class ChangeFeed {
 public:
  ChangeFeed();
  ChangeFeed(const ChangeFeed&) = delete;
  ChangeFeed& operator=(const ChangeFeed&) = delete;
  ~ChangeFeed();  // Requires: every subscription is gone.

  // Registers `callback` (required). Returns: the subscription; destroy it to unsubscribe.
  std::unique_ptr<ChangeSubscription> subscribe(ChangeCallback callback);

  // Gives `record` the next sequence number and delivers it to every subscriber.
  // Requires: called by the writer thread only, after the record's change committed.
  void publish(ChangeRecord& record);

  // Returns: the sequence number of the last record published (0: none yet). Any thread.
  std::uint64_t last_sequence() const;

 private:
  friend class ChangeSubscription;
  void unsubscribe(ChangeSubscription::Slot* slot);

  mutable Mutex mu_;  // Held while delivering, so that unsubscribing waits for a callback.
  std::vector<std::unique_ptr<ChangeSubscription::Slot>> slots_ NUMADIR_GUARDED_BY(mu_);
  std::uint64_t last_sequence_ NUMADIR_GUARDED_BY(mu_) = 0;
  // The thread inside publish() while it delivers (with mu_ held), else a default id: lets
  // subscribe() and unsubscribe() called from a callback work without taking mu_ again.
  // Stored and loaded relaxed: a thread compares it with its own id, which only that thread
  // itself can have stored.
  std::atomic<std::thread::id> delivering_{};
};

}  // namespace numadir::backend

// server/operations/operation_access.h: OperationAccess, the access checks of one operation: who
// asks (a Requester whose group clauses read group entries from the directory, each answer kept
// for the operation), and the entry reads the access rules need to decide, through an
// EntryReader: the worker's side transaction (a search may be holding the operation's own one
// open), or, for an update, the writer's transaction as its check sees it (backend::WriteView),
// so that the decision and the change it allows are one atomic step.
//
// Fail closed: a read an access decision needs that fails other than by the entry's absence (a
// storage error reading a group entry, the entry a filtered rule tests, the parent of an add or
// delete) makes the decision kFailed, and with it every later decision of the operation: the
// operation ends with failure() (kAccessCheckFailed, which answers `other` (80) and is logged
// once, by the ResultSender, with the DN read and its error).
//
// Thread contract: made and used by one thread for one operation: the worker running it, or the
// writer thread running an update's check. The context, the reader (or worker state) and the
// identity it borrows outlive it. An EntryReader is used by the thread that made it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/directory_update.h"
#include "schema/entry.h"
#include "server/operations/access_control.h"
#include "server/operations/operation_context.h"
#include "server/operations/server_session.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

// Where access checks read entries (the target, its parent, group entries).
class EntryReader {
 public:
  virtual ~EntryReader() = default;
  // Errors: kNoSuchObject if absent (message: the matched DN); kInvalidDnSyntax; kStorage.
  virtual Result<schema::Entry> get(std::string_view dn) const = 0;
  // Passes the entry `dn` undecoded to `on_entry` (valid during the call). Errors: as get().
  virtual Status lookup(std::string_view dn,
                        const std::function<void(const backend::EntryRef&)>& on_entry) const = 0;
};

// Reads through a read transaction of the directory (a snapshot taken before any write).
class TxnEntryReader final : public EntryReader {
 public:
  // Requires: `directory` and `txn` outlive the reader.
  TxnEntryReader(const backend::Directory& directory, backend::ReadTxn& txn)
      : directory_(directory), txn_(txn) {}
  Result<schema::Entry> get(std::string_view dn) const override { return directory_.get(txn_, dn); }
  Status lookup(std::string_view dn,
                const std::function<void(const backend::EntryRef&)>& on_entry) const override {
    return directory_.lookup(txn_, dn, on_entry);
  }

 private:
  const backend::Directory& directory_;
  backend::ReadTxn& txn_;
};

// Reads through the write transaction, in an update's check (backend::WriteCheck).
class ViewEntryReader final : public EntryReader {
 public:
  // Requires: `view` outlives the reader (it is valid during its check only).
  explicit ViewEntryReader(const backend::WriteView& view) : view_(view) {}
  Result<schema::Entry> get(std::string_view dn) const override { return view_.get(dn); }
  Status lookup(std::string_view dn,
                const std::function<void(const backend::EntryRef&)>& on_entry) const override {
    return view_.lookup(dn, on_entry);
  }

 private:
  const backend::WriteView& view_;
};

class OperationAccess {
 public:
  // Reads entries through `state`'s side transaction.
  OperationAccess(const OperationContext& context, ServerWorkerState& state, const Identity& who)
      : context_(context),
        own_reader_(std::in_place, context.directory(), state.side_txn()),
        reader_(*own_reader_),
        groups_(*this),
        requester_{who, context.access().has_groups() ? &groups_ : nullptr} {}
  // Reads entries through `reader`.
  OperationAccess(const OperationContext& context, const EntryReader& reader, const Identity& who)
      : context_(context),
        reader_(reader),
        groups_(*this),
        requester_{who, context.access().has_groups() ? &groups_ : nullptr} {}
  OperationAccess(const OperationAccess&) = delete;
  OperationAccess& operator=(const OperationAccess&) = delete;

  const Requester& requester() const { return requester_; }
  // Where this operation's checks read entries.
  const EntryReader& reader() const { return reader_; }
  const AccessControl& rules() const { return context_.access(); }

  // Returns: whether the requester has privilege `level` on `attribute` of `entry`; kFailed
  //   once a read of this operation's checks has failed.
  AccessDecision decide(const AccessEntry& entry, const AccessAttribute& attribute,
                        AccessLevel level) const {
    if (!failure_.ok()) [[unlikely]] {
      return AccessDecision::kFailed;
    }
    return context_.access().decide(requester_, entry, attribute, level);
  }
  // As decide, for the entry named `ndn` (`entry`: its content, when entry_for_access gave it).
  AccessDecision may(std::string_view ndn, const std::optional<schema::Entry>& entry,
                     const AccessAttribute& attribute, AccessLevel level) const {
    return decide(AccessEntry{ndn, entry.has_value() ? &*entry : nullptr}, attribute, level);
  }
  // Returns: whether the requester may add or remove entries below the entry `parent_ndn`.
  AccessDecision may_write_children(std::string_view parent_ndn) const;
  // Returns: whether the requester may learn that the entry `dn` exists (for an answer that
  //   would name it: a result's matchedDN, noSuchObject versus another error).
  AccessDecision discloses(std::string_view dn) const;
  // Returns: the stored entry `dn`, when the access rules need entries to decide (filters);
  //   nullopt otherwise or when it cannot be read (when the read failed other than by its
  //   absence, the operation's decisions fail from then on).
  std::optional<schema::Entry> entry_for_access(std::string_view dn) const;

  // Returns: ok while every read of this operation's access checks worked; otherwise
  //   kAccessCheckFailed naming the first read that failed and its error.
  const Status& failure() const { return failure_; }
  bool failed() const { return !failure_.ok(); }
  // Records that reading the entry `dn` for an access decision failed with `error` (the first
  // failure is kept). Returns: failure().
  const Status& fail(std::string_view dn, const Status& error) const;
  // Returns: whether `status`, the outcome of reading an entry for an access decision, is a
  //   failure (not the entry's absence, nor a DN that names no entry).
  static bool is_read_failure(const Status& status) {
    return !status.ok() && status.code() != StatusCode::kNoSuchObject &&
           status.code() != StatusCode::kInvalidDnSyntax;
  }

  // Returns: ok for kAllowed, `denied()` (a Status) for kDenied, failure() for kFailed.
  template <typename Denied>
  Status status_of(AccessDecision decision, const Denied& denied) const {
    switch (decision) {
      case AccessDecision::kAllowed:
        return Status();
      case AccessDecision::kDenied:
        return denied();
      case AccessDecision::kFailed:
        break;
    }
    return failure_;
  }

 private:
  // Group membership read from the directory for one operation, each answer cached (a failed
  // read is not: it fails the operation's decisions instead).
  class DirectoryGroups final : public GroupMembership {
   public:
    explicit DirectoryGroups(const OperationAccess& access) : access_(access) {}
    Membership is_member(std::string_view group_ndn, std::string_view member_ndn) const override;

   private:
    const OperationAccess& access_;
    mutable std::vector<std::pair<std::string, bool>> answers_;  // Keyed by group ndn.
  };

  const OperationContext& context_;
  const std::optional<TxnEntryReader> own_reader_;  // When made over a worker state.
  const EntryReader& reader_;
  const DirectoryGroups groups_;
  const Requester requester_;
  mutable Status failure_;  // The first failed read; ok (no heap memory) while there is none.
};

}  // namespace numadir::server

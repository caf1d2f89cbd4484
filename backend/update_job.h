// backend/update_job.h: UpdateJob, one update queued to the directory's Writer (an add, remove,
// modify or rename with its UpdateContext, an optional check and a completion), and WriteView,
// the read-only view of the write transaction that a check is given.
//
// Thread contract: a job is built by the submitting thread and handed over whole (Writer takes
// the unique_ptr); from then on only the writer thread touches it. Its check and its completion
// run on the writer thread (see writer.h for what they may do). A WriteView is valid only
// during the check it is passed to.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "backend/directory.h"
#include "base/status.h"
#include "schema/entry.h"

namespace numadir::backend {

// Reads in the write transaction, as it stands before the checked job's change (so it sees
// every earlier job of the same batch): the reads access control and existence checks need
// (the target entry, its parent, group entries).
class WriteView {
 public:
  virtual ~WriteView() = default;
  // Returns: the entry named `dn`, decoded in full (computed operational attributes included).
  // Errors: kNoSuchObject (message: the matched DN); kInvalidDnSyntax; kStorage.
  virtual Result<schema::Entry> get(std::string_view dn) const = 0;
  // Passes the entry named `dn` to `on_entry` without decoding it; the EntryRef is valid only
  // during the call. Errors: as get().
  virtual Status lookup(std::string_view dn,
                        const std::function<void(const EntryRef&)>& on_entry) const = 0;
  // Returns: whether an entry named `dn` exists. Errors: kInvalidDnSyntax; kStorage.
  virtual Result<bool> exists(std::string_view dn) const = 0;
};

struct AddChange {
  schema::Entry entry;
  // Attributes of `entry` the server itself provides (the password policy's pwdChangedTime):
  // written although NO-USER-MODIFICATION. Never taken from a client's request.
  std::vector<std::string> internal_attributes;
};
struct RemoveChange {
  std::string dn;
};
struct ModifyChange {
  std::string dn;
  std::vector<Modification> modifications;
};
struct RenameChange {
  std::string dn;
  std::string new_rdn;
  bool delete_old_rdn = false;
  std::optional<std::string> new_superior;
};

// Runs inside the write transaction before the change; a non-ok Status refuses the job with
// nothing written, and becomes the job's completion status.
using WriteCheck = std::function<Status(const WriteView&)>;
// Called once with the job's outcome: ok only once its change is committed and durable (per
// Durability); otherwise the job's error (as Directory::add / remove / modify / rename
// document them, or the check's Status), and nothing of it was written.
using WriteCompletion = std::function<void(Status)>;

struct UpdateJob {
  std::variant<AddChange, RemoveChange, ModifyChange, RenameChange> change;
  UpdateContext context;
  WriteCheck check;      // Optional.
  WriteCompletion done;  // Optional (nothing is told of the outcome without one).

  // Returns: roughly the bytes the change writes (DNs and values), for the batch bound.
  std::size_t approximate_bytes() const;
};

}  // namespace numadir::backend

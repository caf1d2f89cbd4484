// server/operations/server_session.h: the server's per-connection state behind listener::Session:
// the bound identity and the positions of paged searches (RFC 2696).
//
// Thread contract: created by OperationHandler::open_session on the accepting listener thread;
// then used by the workers running that connection's operations, possibly several at once, so
// every member is guarded by mu_. The listener destroys it after the connection's last handle().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/thread_annotations.h"
#include "listener/request_handler.h"

namespace numadir::server {

// Who a connection is bound as.
struct Identity {
  std::string dn;     // As the client gave it in its bind; empty for anonymous.
  std::string ndn;    // Normalized (the schema's DN normalizer); empty for anonymous.
  bool root = false;  // Bound as the configured rootdn with its password.

  bool anonymous() const { return ndn.empty() && !root; }
};

// Where a paged search stands: the request it belongs to (its signature: everything but the
// paged control and the message ID) and how many entries earlier pages returned.
struct PagedPosition {
  std::string signature;
  std::uint64_t returned = 0;
};

class ServerSession final : public listener::Session {
 public:
  // Paged searches remembered per connection; the oldest is forgotten past this (its cookie
  // then reads as invalid), so a client that never finishes its pages cannot grow the session.
  static constexpr std::size_t kMaxPagedSearches = 16;

  explicit ServerSession(const listener::ConnectionInfo& info) : info_(info) {}

  // TLS: set when the handshake finished (ldaps:// or StartTLS); then never changes.
  void set_tls(const listener::TlsPeer& peer) NUMADIR_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    tls_ = std::make_unique<listener::TlsPeer>(peer);
  }
  // Returns: the connection's TLS peer, or nullopt while it has no TLS.
  std::optional<listener::TlsPeer> tls() const NUMADIR_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (tls_ == nullptr) {
      return std::nullopt;
    }
    return *tls_;
  }
  bool has_tls() const NUMADIR_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return tls_ != nullptr;
  }

  const listener::ConnectionInfo& info() const { return info_; }

  // Returns: a copy of the bound identity (operations use it while a later bind may change it).
  Identity identity() const NUMADIR_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return identity_;
  }
  // Copies the bound identity into `out`, reusing its strings' capacity: an operation that
  // keeps one Identity per worker thread copies it without allocating.
  void copy_identity(Identity& out) const NUMADIR_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    out.dn.assign(identity_.dn);
    out.ndn.assign(identity_.ndn);
    out.root = identity_.root;
  }
  // Switches the identity (a completed bind; anonymous after a failed one). Paged searches of
  // the previous identity are forgotten.
  void set_identity(Identity identity) NUMADIR_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    identity_ = std::move(identity);
    password_change_only_ = false;
    paged_.clear();
  }
  // As set_identity(Identity{dn, ndn, root}), reusing the capacity of the strings held.
  void set_identity(std::string_view dn, std::string_view ndn, bool root) NUMADIR_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    identity_.dn.assign(dn);
    identity_.ndn.assign(ndn);
    identity_.root = root;
    password_change_only_ = false;
    paged_.clear();
  }
  // As set_identity(Identity{}) (anonymous), keeping the strings' capacity for the next bind.
  void clear_identity() NUMADIR_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    identity_.dn.clear();
    identity_.ndn.clear();
    identity_.root = false;
    password_change_only_ = false;
    paged_.clear();
  }

  // The password policy's pwdMustChange: after a bind whose password an administrator reset,
  // the connection may only change that password (and bind, unbind, abandon, StartTLS) until
  // it does or binds again (slapd's ppolicy_restrict).
  void restrict_to_password_change() NUMADIR_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    password_change_only_ = true;
  }
  // Lifts the restriction: the bound identity changed its password.
  void lift_password_restriction() NUMADIR_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    password_change_only_ = false;
  }
  bool password_change_only() const NUMADIR_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return password_change_only_;
  }

  // Remembers a paged search that stopped after `position.returned` entries.
  // Returns: its cookie (a non-zero counter, unique for the session).
  std::uint64_t save_paged(PagedPosition position) NUMADIR_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    const std::uint64_t cookie = ++last_cookie_;
    paged_.emplace_back(cookie, std::move(position));
    if (paged_.size() > kMaxPagedSearches) {
      paged_.erase(paged_.begin());
    }
    return cookie;
  }
  // Returns: the position saved under `cookie`, and forgets it (each page gets a new cookie);
  //   nullopt when the cookie is unknown or was forgotten.
  std::optional<PagedPosition> take_paged(std::uint64_t cookie) NUMADIR_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    for (auto it = paged_.begin(); it != paged_.end(); ++it) {
      if (it->first == cookie) {
        PagedPosition position = std::move(it->second);
        paged_.erase(it);
        return position;
      }
    }
    return std::nullopt;
  }

 private:
  const listener::ConnectionInfo info_;  // Immutable.
  mutable Mutex mu_;
  Identity identity_ NUMADIR_GUARDED_BY(mu_);
  std::uint64_t last_cookie_ NUMADIR_GUARDED_BY(mu_) = 0;
  bool password_change_only_ NUMADIR_GUARDED_BY(mu_) = false;
  // Allocated at the handshake: a connection without TLS does not carry its size.
  std::unique_ptr<listener::TlsPeer> tls_ NUMADIR_GUARDED_BY(mu_);
  // Oldest first, at most kMaxPagedSearches (a vector: nothing allocated until a paged search).
  std::vector<std::pair<std::uint64_t, PagedPosition>> paged_ NUMADIR_GUARDED_BY(mu_);
};

}  // namespace numadir::server

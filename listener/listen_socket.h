// listener/listen_socket.h: the listening sockets of one listen URL, opened so that the address
// is this server's alone.
//
// TCP (ldap://, ldaps://): a group of SO_REUSEPORT sockets, one per listener thread, all on one
// port. SO_REUSEPORT lets any other process of the same effective uid that also sets it join the
// group (and take a share of the connections), so the group is made exclusive in two steps:
//   1. A probe: one socket with SO_REUSEADDR but without SO_REUSEPORT is bound to the address
//      and closed again. The kernel refuses it (EADDRINUSE) when any socket listens on an
//      address that overlaps (the same one, or a wildcard covering it, or a specific one under a
//      requested wildcard), exactly as a server without SO_REUSEPORT (slapd) would be refused;
//      TIME_WAIT connections of a stopped server do not refuse it (SO_REUSEADDR).
//   2. After the group is bound and listening: no other listening TCP socket (in /proc/net/tcp
//      and tcp6) may be on the group's port at an overlapping address. This closes the window
//      between the probe and the group's bind: of two servers starting at once, the one that
//      checks last sees the other's sockets, so at most one keeps the port (both may give up,
//      never both run).
// Port 0 (tests) skips the probe: the kernel picks a port no socket is bound to, and step 2
// still runs.
//
// Unix (ldapi://): one socket (SO_REUSEPORT means nothing there; one listener accepts on it).
// Under an flock(2) on "<path>.lock" (held only while the socket is set up, so two servers
// starting at once take turns): a socket file a live server accepts on (a connect succeeds) is
// refused naming that server's process (SO_PEERCRED); a stale one (connect refused) is removed
// and bound again, as slapd does; any other file there is refused. The mode and owner are set
// before listen(), so no client connects through a looser mode.
//
// Errors name the URL: "ldap://127.0.0.1:389: address already in use by process 1234 (numadir)"
// (the process when /proc tells: it needs the right to read the other process's fds).
//
// Thread contract: functions of their arguments and the system's state; the controlling thread.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "listener/listen_url.h"

namespace numadir::listener {

// How an ldapi:// socket file is made.
struct UnixSocketOptions {
  mode_t mode = 0666;          // Permission bits (connect(2) needs write permission).
  std::optional<uid_t> owner;  // nullopt: the creating process's.
  std::optional<gid_t> group;  // nullopt: the creating process's.
};

// One URL's sockets, bound and listening, non-blocking.
struct ListenSockets {
  ListenUrl bound;       // As bound: port 0 resolved.
  std::vector<int> fds;  // TCP: `count` (one per listener); Unix: one.
  // Unix: the socket file's identity, so that a clean stop removes only its own file.
  dev_t unix_dev = 0;
  ino_t unix_ino = 0;
};

// Opens `url`'s sockets: `count` SO_REUSEPORT ones for TCP, one for ldapi (see above).
// Requires: count >= 1.
// Errors: kAlreadyExists naming the URL (and the owning process where /proc tells) when
//   another socket holds the address; kIo naming the URL and errno's text for any other
//   failing call (socket, bind, listen, chmod, chown, the lock file).
Result<ListenSockets> open_listen_sockets(const ListenUrl& url, std::size_t count,
                                          const UnixSocketOptions& unix_options);

// Step 2 above for a bound TCP group: `fds` are the group's sockets on `url` (port resolved).
// Errors: kAlreadyExists naming the URL and the owner when another listening socket (not one of
//   `fds`) holds an overlapping address on that port.
Status check_exclusive(const ListenUrl& url, const std::vector<int>& fds);

// Returns: " by process PID (COMM)" for the process holding the socket with inode `inode`, or
//   "" when /proc does not tell (it belongs to a process this one may not inspect).
std::string describe_socket_owner(ino_t inode);

// Removes `sockets`' Unix socket file if it is still the one they bound (a later server's file
// at the same path, which has another inode or accepts connections, stays). Requires: their
// socket is closed. Returns: false with `error` set when the file was theirs and could
// not be removed (e.g. no write permission on its directory after the privilege drop).
bool remove_unix_socket(const ListenSockets& sockets, std::string& error);

// Returns: errno, translated once for the listener (STYLE.md): kIo, "<what>: <strerror>".
Status errno_status(const std::string& what);

}  // namespace numadir::listener

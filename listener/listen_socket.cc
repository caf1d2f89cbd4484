// listener/listen_socket.cc: see listen_socket.h.
#include "listener/listen_socket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

namespace numadir::listener {
namespace {

Status in_use(const ListenUrl& url, const std::string& owner) {
  return Status(StatusCode::kAlreadyExists, url.to_string() + ": address already in use" + owner);
}

// An address as the overlap rules see it: IPv4 ones as IPv4-mapped IPv6 ones.
struct Address {
  in6_addr bytes{};
  bool any6 = false;  // [::]: with dual stack (numadir's) it covers every address.
  bool any4 = false;  // 0.0.0.0 (or ::ffff:0.0.0.0): every IPv4 address.
};

Address from_v4(in_addr v4) {
  Address out;
  out.bytes.s6_addr[10] = 0xff;
  out.bytes.s6_addr[11] = 0xff;
  std::memcpy(&out.bytes.s6_addr[12], &v4, 4);
  out.any4 = v4.s_addr == htonl(INADDR_ANY);
  return out;
}

Address from_v6(const in6_addr& v6) {
  if (IN6_IS_ADDR_V4MAPPED(&v6)) {
    in_addr v4;
    std::memcpy(&v4, &v6.s6_addr[12], 4);
    return from_v4(v4);
  }
  Address out;
  out.bytes = v6;
  out.any6 = IN6_IS_ADDR_UNSPECIFIED(&v6);
  return out;
}

bool is_v4(const Address& a) { return IN6_IS_ADDR_V4MAPPED(&a.bytes); }

// Whether a listener on `a` and one on `b` (same port) would take each other's connections, as
// Linux's bind conflict rules see it. A [::] socket counts as dual stack (IPV6_V6ONLY is not in
// /proc/net/tcp6): the cautious answer.
bool overlaps(const Address& a, const Address& b) {
  if (a.any6 || b.any6) {
    return true;
  }
  if ((a.any4 && is_v4(b)) || (b.any4 && is_v4(a))) {
    return true;
  }
  return std::memcmp(&a.bytes, &b.bytes, sizeof(in6_addr)) == 0;
}

Address url_address(const ListenUrl& url) {
  if (url.host.empty()) {
    return from_v6(in6addr_any);
  }
  in_addr v4;
  if (inet_pton(AF_INET, url.host.c_str(), &v4) == 1) {
    return from_v4(v4);
  }
  in6_addr v6{};
  inet_pton(AF_INET6, url.host.c_str(), &v6);
  return from_v6(v6);
}

// Returns: the hex number `text` (0 when it is not one: /proc's lines are well formed).
std::uint64_t hex_number(std::string_view text) {
  std::uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value, 16);
  return value;
}

struct ProcListener {
  Address address;
  std::uint16_t port = 0;
  ino_t inode = 0;
};

// Returns: the listening TCP sockets of this network namespace, from /proc/net/tcp and tcp6
//   (empty where unreadable). Each line: "sl local rem st ... uid timeout inode ...", the local
//   address as hex words in host byte order, then ":PORT" in hex; state 0A is LISTEN.
std::vector<ProcListener> proc_listeners() {
  std::vector<ProcListener> out;
  for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);  // The header.
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout;
      unsigned long long inode = 0;
      if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
            timeout >> inode) ||
          state != "0A") {
        continue;
      }
      const std::size_t colon = local.find(':');
      if (colon == std::string::npos || (colon != 8 && colon != 32)) {
        continue;
      }
      ProcListener listener;
      listener.port =
          static_cast<std::uint16_t>(hex_number(std::string_view(local).substr(colon + 1)));
      listener.inode = static_cast<ino_t>(inode);
      std::uint32_t words[4] = {};
      for (std::size_t w = 0; w < colon / 8; ++w) {
        words[w] = static_cast<std::uint32_t>(hex_number(std::string_view(local).substr(w * 8, 8)));
      }
      if (colon == 8) {
        in_addr v4;
        std::memcpy(&v4, &words[0], 4);
        listener.address = from_v4(v4);
      } else {
        in6_addr v6;
        std::memcpy(&v6, words, 16);
        listener.address = from_v6(v6);
      }
      out.push_back(listener);
    }
  }
  return out;
}

ino_t inode_of(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

// Returns: the owner (describe_socket_owner) of a listener on `url`'s port at an overlapping
//   address other than `ours`, or nullopt when there is none.
std::optional<std::string> other_listener(const ListenUrl& url, std::uint16_t port,
                                          const std::set<ino_t>& ours) {
  const Address wanted = url_address(url);
  for (const ProcListener& listener : proc_listeners()) {
    if (listener.port == port && ours.count(listener.inode) == 0 &&
        overlaps(wanted, listener.address)) {
      return describe_socket_owner(listener.inode);
    }
  }
  return std::nullopt;
}

std::string process_name(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

// Returns: an unbound TCP socket for `url` with `address` filled in for `port`.
Result<int> tcp_socket(const ListenUrl& url, std::uint16_t port, sockaddr_storage& address,
                       socklen_t& length) {
  address = {};
  const bool v4 = !url.host.empty() && url.host.find(':') == std::string::npos;
  if (v4) {
    auto& in = reinterpret_cast<sockaddr_in&>(address);
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    inet_pton(AF_INET, url.host.c_str(), &in.sin_addr);
    length = sizeof(in);
  } else {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(address);
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(port);
    in6.sin6_addr = in6addr_any;
    if (!url.host.empty()) {
      inet_pton(AF_INET6, url.host.c_str(), &in6.sin6_addr);
    }
    length = sizeof(in6);
  }
  const int fd = socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return errno_status(url.to_string() + ": socket");
  }
  const int on = 1;
  const int off = 0;
  // A stopped server's TIME_WAIT connections never keep the port from a new one.
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (!v4 && url.host.empty()) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));  // Dual stack.
  }
  return fd;
}

// Step 1 (listen_socket.h): Errors: kAlreadyExists when the kernel refuses a non-REUSEPORT bind.
Status probe(const ListenUrl& url) {
  sockaddr_storage address{};
  socklen_t length = 0;
  Result<int> fd = tcp_socket(url, url.port, address, length);
  if (!fd.ok()) {
    return fd.status();
  }
  const int bound = bind(*fd, reinterpret_cast<const sockaddr*>(&address), length);
  const int error = errno;
  ::close(*fd);
  if (bound == 0) {
    return Status();
  }
  if (error == EADDRINUSE) {
    return in_use(url, other_listener(url, url.port, {}).value_or(""));
  }
  errno = error;
  return errno_status(url.to_string() + ": bind");
}

// Returns: a bound, listening SO_REUSEPORT socket for `url` on `port`.
Result<int> open_group_socket(const ListenUrl& url, std::uint16_t port) {
  sockaddr_storage address{};
  socklen_t length = 0;
  Result<int> fd = tcp_socket(url, port, address, length);
  if (!fd.ok()) {
    return fd.status();
  }
  const int on = 1;
  setsockopt(*fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on));
  if (bind(*fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    const int error = errno;
    ::close(*fd);
    if (error == EADDRINUSE) {
      return in_use(url, other_listener(url, port, {}).value_or(""));
    }
    errno = error;
    return errno_status(url.to_string() + ": bind");
  }
  if (listen(*fd, SOMAXCONN) != 0) {
    Status status = errno_status(url.to_string() + ": listen");
    ::close(*fd);
    return status;
  }
  return *fd;
}

std::uint16_t bound_port(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  return ntohs(address.ss_family == AF_INET
                   ? reinterpret_cast<const sockaddr_in&>(address).sin_port
                   : reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
}

Result<ListenSockets> open_tcp(const ListenUrl& url, std::size_t count) {
  if (url.port != 0) {
    if (Status probed = probe(url); !probed.ok()) {
      return probed;
    }
  }
  ListenSockets out;
  out.bound = url;
  for (std::size_t i = 0; i < count; ++i) {
    Result<int> fd = open_group_socket(url, out.bound.port);
    if (!fd.ok()) {
      for (const int open : out.fds) {
        ::close(open);
      }
      return fd.status();
    }
    out.bound.port = bound_port(*fd);  // Port 0: the rest join the port the first got.
    out.fds.push_back(*fd);
  }
  if (Status exclusive = check_exclusive(out.bound, out.fds); !exclusive.ok()) {
    for (const int open : out.fds) {
      ::close(open);
    }
    return exclusive;
  }
  return out;
}

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());  // parse_listen_url bounds it.
  return address;
}

// Returns: "" when nothing accepts on `path` (the file is stale), else why it is not free: the
//   live server (" by process N (comm)") or the connect's failure.
std::optional<std::string> live_unix_owner(const std::string& path, int& connect_errno) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    connect_errno = errno;
    return std::nullopt;
  }
  const sockaddr_un address = unix_address(path);
  const int connected = connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  connect_errno = connected == 0 ? 0 : errno;
  std::optional<std::string> owner;
  if (connected == 0 || connect_errno == EAGAIN) {  // EAGAIN: a live server's full backlog.
    owner = "";
    ucred peer{};
    socklen_t length = sizeof(peer);
    if (connected == 0 && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &length) == 0 &&
        peer.pid > 0) {
      const std::string pid = std::to_string(peer.pid);
      const std::string name = process_name(pid);
      *owner = " by process " + pid + (name.empty() ? "" : " (" + name + ")");
    }
  }
  ::close(fd);
  return owner;
}

Result<ListenSockets> open_unix(const ListenUrl& url, const UnixSocketOptions& options) {
  const std::string& path = url.path;
  const std::string name = url.to_string();
  // Two servers starting at once take turns: the second sees the first's socket listening.
  const std::string lock_path = path + ".lock";
  const int lock = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0) {
    if (errno == ENOENT) {
      const std::string dir = path.substr(0, path.rfind('/'));
      return Status(StatusCode::kIo, name + ": the directory " + (dir.empty() ? "/" : dir) +
                                         " does not exist (create it, or systemd's "
                                         "RuntimeDirectory= does)");
    }
    return errno_status(name + ": " + lock_path);
  }
  struct LockGuard {
    int fd;
    ~LockGuard() { ::close(fd); }  // Closing releases the flock.
  } guard{lock};
  if (flock(lock, LOCK_EX) != 0) {
    return errno_status(name + ": flock " + lock_path);
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return errno_status(name + ": socket");
  }
  auto fail = [fd](Status status) {
    ::close(fd);
    return status;
  };
  const sockaddr_un address = unix_address(path);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    if (errno != EADDRINUSE) {
      return fail(errno_status(name + ": bind " + path));
    }
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
      return fail(
          Status(StatusCode::kAlreadyExists, name + ": " + path + " exists and is not a socket"));
    }
    int connect_errno = 0;
    if (std::optional<std::string> owner = live_unix_owner(path, connect_errno)) {
      return fail(in_use(url, *owner));
    }
    if (connect_errno != ECONNREFUSED) {
      errno = connect_errno;
      return fail(errno_status(name + ": " + path + " exists; connect"));
    }
    // Stale: left by a server that did not stop cleanly. slapd removes it too.
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return fail(errno_status(name + ": removing the stale socket " + path));
    }
    if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
      return fail(errno_status(name + ": bind " + path));
    }
  }
  ListenSockets out;
  out.bound = url;
  out.fds.push_back(fd);
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    out.unix_dev = st.st_dev;
    out.unix_ino = st.st_ino;
  }
  auto remove_and_fail = [&](Status status) {
    unlink(path.c_str());
    return fail(std::move(status));
  };
  // Before listen(): until then every connect is refused, so none passes under the umask's mode.
  if (chmod(path.c_str(), options.mode) != 0) {
    return remove_and_fail(errno_status(name + ": chmod " + path));
  }
  if ((options.owner.has_value() || options.group.has_value()) &&
      chown(path.c_str(), options.owner.value_or(static_cast<uid_t>(-1)),
            options.group.value_or(static_cast<gid_t>(-1))) != 0) {
    return remove_and_fail(errno_status(name + ": chown " + path));
  }
  if (listen(fd, SOMAXCONN) != 0) {
    return remove_and_fail(errno_status(name + ": listen"));
  }
  return out;
}

}  // namespace

std::string describe_socket_owner(ino_t inode) {
  const std::string wanted = "socket:[" + std::to_string(inode) + "]";
  DIR* proc = opendir("/proc");
  if (proc == nullptr) {
    return "";
  }
  std::string found;
  while (const dirent* process = readdir(proc)) {
    const std::string pid = process->d_name;
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    const std::string fd_dir = "/proc/" + pid + "/fd";
    DIR* fds = opendir(fd_dir.c_str());
    if (fds == nullptr) {
      continue;  // Gone, or not ours to inspect.
    }
    while (const dirent* entry = readdir(fds)) {
      char target[64];
      const std::string link = fd_dir + "/" + entry->d_name;
      const ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
      if (n > 0 && std::string_view(target, static_cast<std::size_t>(n)) == wanted) {
        const std::string name = process_name(pid);
        found = " by process " + pid + (name.empty() ? "" : " (" + name + ")");
        break;
      }
    }
    closedir(fds);
    if (!found.empty()) {
      break;
    }
  }
  closedir(proc);
  return found;
}

Status check_exclusive(const ListenUrl& url, const std::vector<int>& fds) {
  std::set<ino_t> ours;
  for (const int fd : fds) {
    ours.insert(inode_of(fd));
  }
  if (std::optional<std::string> owner = other_listener(url, url.port, ours)) {
    return in_use(url, *owner);
  }
  return Status();
}

Result<ListenSockets> open_listen_sockets(const ListenUrl& url, std::size_t count,
                                          const UnixSocketOptions& unix_options) {
  if (url.is_local()) {
    return open_unix(url, unix_options);
  }
  return open_tcp(url, count);
}

bool remove_unix_socket(const ListenSockets& sockets, std::string& error) {
  if (!sockets.bound.is_local()) {
    return true;
  }
  struct stat st {};
  if (lstat(sockets.bound.path.c_str(), &st) != 0 || st.st_dev != sockets.unix_dev ||
      st.st_ino != sockets.unix_ino) {
    return true;  // Gone already, or another server's now.
  }
  // A file system may give a replacing file the inode just freed: a socket someone accepts on
  // (ours is closed by now) is another server's.
  int connect_errno = 0;
  if (live_unix_owner(sockets.bound.path, connect_errno).has_value()) {
    return true;
  }
  if (unlink(sockets.bound.path.c_str()) != 0 && errno != ENOENT) {
    error = sockets.bound.to_string() + ": removing " + sockets.bound.path + ": " +
            std::strerror(errno);
    return false;
  }
  return true;
}

Status errno_status(const std::string& what) {
  return Status(StatusCode::kIo, what + ": " + std::strerror(errno));
}

}  // namespace numadir::listener

#include "perf/auth_worker.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <openssl/ssl.h>

#include "base/check.h"
#include "listener/wire/ber_writer.h"
#include "listener/wire/framing.h"
#include "listener/wire/ldap_message.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"
#include "perf/detail/auth_worker.h"

namespace numadir::perf {

namespace wire = listener::wire;
using detail::kNsPerMs;

namespace {

constexpr int kMaxEvents = 256;

// epoll_event.data.u64 of a connection: its open generation (high 32 bits), its slot's index
// and its place in the slot. The generation makes an event that a closed socket left in the
// current batch (its connection since reopened, maybe on the same fd number) recognisably
// stale. The stop eventfd and the timerfd use tags no connection can have.
constexpr std::uint64_t kStopTag = ~std::uint64_t{0};
constexpr std::uint64_t kTimerTag = ~std::uint64_t{0} - 1;

}  // namespace

std::string_view auth_mode_name(AuthMode mode) {
  switch (mode) {
    case AuthMode::kSame:
      return "same";
    case AuthMode::kSplit:
      return "split";
    case AuthMode::kBindOnly:
      return "bind-only";
    case AuthMode::kSearchOnly:
      return "search-only";
    case AuthMode::kModify:
      return "modify";
  }
  return "unknown";
}

Result<AuthMode> parse_auth_mode(std::string_view name) {
  for (AuthMode mode : {AuthMode::kSame, AuthMode::kSplit, AuthMode::kBindOnly,
                        AuthMode::kSearchOnly, AuthMode::kModify}) {
    if (name == auth_mode_name(mode)) {
      return mode;
    }
  }
  return invalid_argument("--mode must be same, split, bind-only, search-only or modify, not '" +
                          std::string(name) + "'");
}

std::int64_t monotonic_ns() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

AuthWorker::AuthWorker(WorkerConfig config, WorkerStats& stats)
    : config_(std::move(config)),
      stats_(stats),
      rng_(config_.seed),
      scratch_(std::make_unique<Scratch>()) {
  NUMADIR_CHECK(config_.workload != nullptr && config_.servers != nullptr && config_.slots > 0,
                "AuthWorker: bad config");
  const bool split = config_.mode == AuthMode::kSplit;
  routes_.resize(2 * static_cast<std::size_t>(config_.slots));
  for (int i = 0; i < config_.slots; ++i) {
    auto slot = std::make_unique<Slot>();
    for (std::uint64_t place = 0; place < 2; ++place) {
      slot->connections[place].slot = slot.get();
      slot->connections[place].tag_base = static_cast<std::uint64_t>(i) << 1 | place;
      // Round-robin over the run's connections (place 1 exists only in split mode).
      const auto number =
          static_cast<std::size_t>(config_.first_connection) +
          (split ? 2 * static_cast<std::size_t>(i) + place : static_cast<std::size_t>(i));
      routes_[slot->connections[place].tag_base].server =
          static_cast<std::uint8_t>(config_.servers->initial(number));
    }
    slots_.push_back(std::move(slot));
  }
  wrong_password_.assign(slots_.size(), 0);
  if (config_.timeout_ms > 0) {
    timeout_ns_ = config_.timeout_ms * kNsPerMs;
    sweep_every_ns_ = std::clamp<std::int64_t>(timeout_ns_ / 4, kNsPerMs, 250 * kNsPerMs);
  }
  idle_.reserve(slots_.size());
  deferred_.reserve(slots_.size());
  if (config_.rate_per_sec > 0) {
    interval_ns_ = std::max<std::int64_t>(1, static_cast<std::int64_t>(1e9 / config_.rate_per_sec));
  }
}

AuthWorker::~AuthWorker() {
  for (auto& slot : slots_) {
    for (Connection& conn : slot->connections) {
      SSL_free(conn.ssl);
      if (conn.fd >= 0) {
        ::close(conn.fd);
      }
    }
  }
  if (timer_fd_ >= 0) {
    ::close(timer_fd_);
  }
  if (epoll_fd_ >= 0) {
    ::close(epoll_fd_);
  }
}

Status AuthWorker::run() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (epoll_fd_ < 0 || timer_fd_ < 0) {
    return status_error(StatusCode::kIo, std::string("epoll/timerfd: ") + std::strerror(errno));
  }
  epoll_event stop_event{EPOLLIN, {.u64 = kStopTag}};
  epoll_event timer_event{EPOLLIN, {.u64 = kTimerTag}};
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, config_.stop_fd, &stop_event) != 0 ||
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, timer_fd_, &timer_event) != 0) {
    return status_error(StatusCode::kIo, std::string("epoll_ctl: ") + std::strerror(errno));
  }
  if (timeout_ns_ > 0) {
    next_sweep_ns_ = monotonic_ns() + sweep_every_ns_;
  }
  const bool split = config_.mode == AuthMode::kSplit;
  for (auto& slot : slots_) {
    if (!config_.reconnect) {
      open_connection(slot->connections[0]);
      if (split) {
        open_connection(slot->connections[1]);
      }
    }
    if (interval_ns_ == 0) {
      start_auth(*slot, monotonic_ns());
    } else {
      idle_.push_back(slot.get());
    }
  }
  epoll_event events[kMaxEvents];
  for (;;) {
    run_timers(monotonic_ns());
    arm_timer();
    const int count = epoll_wait(epoll_fd_, events, kMaxEvents, -1);
    if (count < 0) {
      NUMADIR_CHECK(errno == EINTR, "epoll_wait failed with valid arguments");
      continue;
    }
    for (int i = 0; i < count; ++i) {
      const std::uint64_t tag = events[i].data.u64;
      if (tag == kStopTag) {
        for (auto& slot : slots_) {
          for (Connection& conn : slot->connections) {
            close_connection(conn, /*send_unbind=*/true);
          }
        }
        return Status();
      }
      if (tag == kTimerTag) {
        std::uint64_t expirations = 0;
        // Draining the counter; its value does not matter (run_timers looks at the clock).
        [[maybe_unused]] const ssize_t n = ::read(timer_fd_, &expirations, sizeof expirations);
        armed_ns_ = 0;
        continue;
      }
      Connection& conn = slots_[(tag & 0xffff'ffff) >> 1]->connections[tag & 1];
      if (conn.fd >= 0 && tag >> 32 == conn.generation) {
        on_event(conn, events[i].events);
      }
    }
  }
}

void AuthWorker::run_timers(std::int64_t now_ns) {
  if (timeout_ns_ > 0 && now_ns >= next_sweep_ns_) {
    expire_timeouts(now_ns);
    next_sweep_ns_ = now_ns + sweep_every_ns_;
  }
  if (!deferred_.empty()) {
    for (std::size_t i = 0; i < deferred_.size();) {
      Slot& slot = *deferred_[i];
      if (slot.retry_ns > now_ns) {
        ++i;
        continue;
      }
      deferred_[i] = deferred_.back();
      deferred_.pop_back();
      slot.deferred = false;
      next_auth(slot);
    }
  }
  if (interval_ns_ > 0 && now_ns >= config_.rate_start_ns) {
    due_ = static_cast<std::uint64_t>((now_ns - config_.rate_start_ns) / interval_ns_) + 1;
    while (started_ < due_ && !idle_.empty()) {
      Slot& slot = *idle_.back();
      idle_.pop_back();
      start_auth(slot, config_.rate_start_ns + static_cast<std::int64_t>(started_) * interval_ns_);
      ++started_;
    }
  }
}

void AuthWorker::arm_timer() {
  std::int64_t deadline = 0;
  for (const Slot* slot : deferred_) {
    deadline = deadline == 0 ? slot->retry_ns : std::min(deadline, slot->retry_ns);
  }
  // The next intended send only matters when a slot is free to take it.
  if (interval_ns_ > 0 && !idle_.empty()) {
    const std::int64_t next =
        config_.rate_start_ns + static_cast<std::int64_t>(started_) * interval_ns_;
    deadline = deadline == 0 ? next : std::min(deadline, next);
  }
  if (timeout_ns_ > 0) {
    deadline = deadline == 0 ? next_sweep_ns_ : std::min(deadline, next_sweep_ns_);
  }
  if (deadline == armed_ns_) {
    return;
  }
  itimerspec spec{};
  if (deadline != 0) {
    // An absolute time already past fires at once, so a 0-delay defer needs no special case.
    spec.it_value.tv_sec = deadline / 1'000'000'000;
    spec.it_value.tv_nsec = std::max<std::int64_t>(deadline % 1'000'000'000, 1);
  }
  NUMADIR_CHECK(timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr) == 0,
                "timerfd_settime failed with valid arguments");
  armed_ns_ = deadline;
}

void AuthWorker::expire_timeouts(std::int64_t now_ns) {
  for (auto& slot : slots_) {
    for (Connection& conn : slot->connections) {
      // Waiting: not yet ready for requests, or a request unanswered. An idle open connection
      // (open loop, or split mode's other connection) has no deadline.
      const bool waiting = conn.state != Connection::State::kOpen || conn.pending_id != 0;
      if (conn.fd >= 0 && waiting && routes_[conn.tag_base].deadline_ns <= now_ns) {
        // drop() only defers the slot: nothing reopens while this loop runs.
        drop(conn, AuthError::kTimeout, 0);
      }
    }
  }
}

void AuthWorker::on_message(Connection& conn) {
  const wire::LdapMessage& message = scratch_->response;
  Slot& slot = *conn.slot;
  if (message.message_id == wire::kUnsolicitedMessageId) {
    // A Notice of Disconnection (or another unsolicited notice): the server is closing.
    drop(conn, AuthError::kConnectionDropped, 0);
    return;
  }
  if (conn.state == Connection::State::kStartTls) {
    on_start_tls_answer(conn);
    return;
  }
  if (!slot.active || conn.pending_id == 0 || message.message_id != conn.pending_id ||
      &phase_connection(slot) != &conn) {
    drop(conn, AuthError::kProtocolError, 0);
    return;
  }
  const bool search = slot.phase == Slot::Phase::kSearch;
  switch (message.op) {
    case wire::ProtocolOp::kSearchResultEntry:
      if (!search) {
        break;
      }
      if (++slot.entries == 1) {
        slot.dn.assign(message.search_entry.object_name);
      }
      return;
    case wire::ProtocolOp::kSearchResultReference:
      if (!search) {
        break;
      }
      return;
    case wire::ProtocolOp::kSearchResultDone:
      if (!search) {
        break;
      }
      conn.pending_id = 0;
      if (message.result.code != wire::ResultCode::kSuccess) {
        fail_auth(slot, static_cast<std::int32_t>(message.result.code));
      } else if (slot.entries != 1) {
        stats_.count_error(slot.entries == 0 ? AuthError::kNoEntry : AuthError::kMultipleEntries);
        slot.active = false;
        next_auth(slot);
      } else if (config_.mode == AuthMode::kSearchOnly) {
        complete_auth(slot);
      } else {
        slot.phase = Slot::Phase::kBind;
        slot.request_sent = false;
        set_bind_password(slot);
        advance(slot);
      }
      return;
    case wire::ProtocolOp::kBindResponse:
      if (search) {
        break;
      }
      conn.pending_id = 0;
      if (slot.phase == Slot::Phase::kModify) {
        on_modify_bind(slot, conn, message.result.code);
      } else if (wrong_password_[slot_index(slot)] != 0) {
        on_wrong_password_answer(slot, message.result.code);
      } else if (message.result.code != wire::ResultCode::kSuccess) {
        fail_auth(slot, static_cast<std::int32_t>(message.result.code));
      } else {
        complete_auth(slot);
      }
      return;
    case wire::ProtocolOp::kModifyResponse:
      if (slot.phase != Slot::Phase::kModify || !conn.bound) {
        break;
      }
      conn.pending_id = 0;
      if (message.result.code != wire::ResultCode::kSuccess) {
        fail_auth(slot, static_cast<std::int32_t>(message.result.code));
      } else {
        complete_auth(slot);
      }
      return;
    default:
      break;
  }
  drop(conn, AuthError::kProtocolError, 0);
}

void AuthWorker::on_modify_bind(Slot& slot, Connection& conn, wire::ResultCode code) {
  if (conn.bound) {
    drop(conn, AuthError::kProtocolError, 0);  // Only the connection's first bind is ours.
    return;
  }
  if (code != wire::ResultCode::kSuccess) {
    // A refused bind would be refused again at once: count it and retry after a pause.
    drop_with_code(conn, static_cast<std::int32_t>(code), kConnectRetryMs * kNsPerMs);
    return;
  }
  conn.bound = true;
  if (interval_ns_ == 0) {
    slot.start_ns = monotonic_ns();  // Closed loop: the one-time bind is no modification's.
  }
  send_request(slot, conn);
}

void AuthWorker::on_wrong_password_answer(Slot& slot, wire::ResultCode code) {
  stats_.count_wrong_password_bind();
  if (code == wire::ResultCode::kInvalidCredentials) {
    // Refused as it should be: a completed auth, its latency that of a refusal.
    const std::int64_t latency = monotonic_ns() - slot.start_ns;
    stats_.count_wrong_password_refused(
        static_cast<std::uint64_t>(std::max<std::int64_t>(latency, 0)),
        routes_[phase_connection(slot).tag_base].server);
    slot.active = false;
    next_auth(slot);
  } else if (code == wire::ResultCode::kSuccess) {
    stats_.count_error(AuthError::kWrongPasswordAccepted);
    slot.active = false;
    next_auth(slot);
  } else {
    fail_auth(slot, static_cast<std::int32_t>(code));
  }
}

void AuthWorker::set_bind_password(Slot& slot) {
  if (wrong_password_[slot_index(slot)] != 0) {
    config_.workload->wrong_password(slot.user, slot.password);
  } else {
    config_.workload->password(slot.user, slot.password);
  }
}

std::size_t AuthWorker::slot_index(const Slot& slot) {
  return static_cast<std::size_t>(slot.connections[0].tag_base >> 1);
}

AuthWorker::Connection& AuthWorker::phase_connection(Slot& slot) {
  const bool second = config_.mode == AuthMode::kSplit && slot.phase == Slot::Phase::kBind;
  return slot.connections[second ? 1 : 0];
}

void AuthWorker::start_auth(Slot& slot, std::int64_t intended_ns) {
  slot.active = true;
  slot.request_sent = false;
  slot.start_ns = intended_ns;
  slot.user = config_.workload->pick_user(rng_);
  slot.entries = 0;
  const bool binds = config_.mode == AuthMode::kSame || config_.mode == AuthMode::kSplit ||
                     config_.mode == AuthMode::kBindOnly;
  wrong_password_[slot_index(slot)] = binds && config_.workload->pick_wrong_password(rng_);
  if (config_.mode == AuthMode::kBindOnly) {
    slot.phase = Slot::Phase::kBind;
    config_.workload->bind_dn(slot.user, slot.dn);
    set_bind_password(slot);
  } else if (config_.mode == AuthMode::kModify) {
    slot.phase = Slot::Phase::kModify;
  } else {
    slot.phase = Slot::Phase::kSearch;
  }
  advance(slot);
}

void AuthWorker::advance(Slot& slot) {
  Connection& conn = phase_connection(slot);
  switch (conn.state) {
    case Connection::State::kClosed:
      open_connection(conn);  // on_connected() comes back here; a failure defers the slot.
      return;
    case Connection::State::kConnecting:
    case Connection::State::kStartTls:
    case Connection::State::kHandshaking:
      return;  // connection_ready() comes back here.
    case Connection::State::kOpen:
      send_request(slot, conn);
      return;
  }
}

void AuthWorker::send_request(Slot& slot, Connection& conn) {
  wire::LdapMessage& request = scratch_->request;
  const std::int32_t id = conn.next_id;
  conn.next_id = conn.next_id == INT32_MAX ? 1 : conn.next_id + 1;
  const WorkloadOptions& options = config_.workload->options();
  if (slot.phase == Slot::Phase::kSearch) {
    request.reset(id, wire::ProtocolOp::kSearchRequest);
    wire::SearchRequest& search = request.search_request;
    search.base_object = options.base;
    search.scope = wire::SearchScope::kWholeSubtree;
    config_.workload->build_filter(slot.user, search.filter, scratch_->filter_strings);
    for (const std::string& attribute : options.attributes) {
      search.attributes.push_back(attribute);
    }
  } else if (slot.phase == Slot::Phase::kModify && conn.bound) {
    config_.workload->build_modify(id, slot.user, modifies_++, request, slot.dn, slot.value);
  } else if (slot.phase == Slot::Phase::kModify) {
    // The connection's one bind, before its first modification (on_modify_bind goes on).
    request.reset(id, wire::ProtocolOp::kBindRequest);
    request.bind_request.name = options.modify_bind_dn;
    request.bind_request.simple_password = options.modify_bind_password;
  } else {
    request.reset(id, wire::ProtocolOp::kBindRequest);
    request.bind_request.name = slot.dn;
    request.bind_request.simple_password = slot.password;
  }
  wire::encode_message(request, conn.output);
  conn.pending_id = id;
  slot.request_sent = true;
  if (timeout_ns_ > 0) {
    routes_[conn.tag_base].deadline_ns = monotonic_ns() + timeout_ns_;
  }
  flush(conn);
}

void AuthWorker::complete_auth(Slot& slot) {
  const std::int64_t latency = monotonic_ns() - slot.start_ns;
  stats_.count_auth(static_cast<std::uint64_t>(std::max<std::int64_t>(latency, 0)),
                    routes_[phase_connection(slot).tag_base].server);
  slot.active = false;
  next_auth(slot);
}

void AuthWorker::fail_auth(Slot& slot, std::int32_t result_code) {
  stats_.count_result_code(result_code);
  slot.active = false;
  next_auth(slot);
}

void AuthWorker::drop(Connection& conn, AuthError kind, std::int64_t delay_ns) {
  stats_.count_error(kind);
  close_connection(conn, /*send_unbind=*/false);
  // The server failed (as nslcd and SSSD judge it): the connection goes to the next one. A
  // protocol error is the answer's fault, not the server's being down: it reconnects there.
  if (kind == AuthError::kConnectFailed || kind == AuthError::kConnectionDropped ||
      kind == AuthError::kTlsFailed || kind == AuthError::kTimeout) {
    delay_ns = fail_over(conn, delay_ns);
  }
  abandon_slot_of(conn, delay_ns);
}

std::int64_t AuthWorker::fail_over(Connection& conn, std::int64_t delay_ns) {
  Route& route = routes_[conn.tag_base];
  ++route.failures_in_row;
  const std::size_t next = config_.servers->next(route.server);
  if (next != route.server) {
    stats_.count_failover(route.server);
    route.server = static_cast<std::uint8_t>(next);
    conn.session.reset(nullptr);  // The other server's session: not to be offered to this one.
  }
  return config_.servers->retry_delay_ns(route.failures_in_row, delay_ns);
}

const ServerTarget& AuthWorker::server_of(const Connection& conn) const {
  return (*config_.servers)[routes_[conn.tag_base].server];
}

void AuthWorker::drop_with_code(Connection& conn, std::int32_t result_code, std::int64_t delay_ns) {
  stats_.count_result_code(result_code);
  close_connection(conn, /*send_unbind=*/false);
  abandon_slot_of(conn, delay_ns);
}

void AuthWorker::abandon_slot_of(Connection& conn, std::int64_t delay_ns) {
  Slot& slot = *conn.slot;
  if (slot.active && &phase_connection(slot) == &conn) {
    // The auth is lost. Its slot starts the next one from the timer, not from here, so a
    // server that resets every connection cannot recurse us into the ground.
    slot.active = false;
    defer(slot, monotonic_ns() + delay_ns);
  }
}

void AuthWorker::defer(Slot& slot, std::int64_t at_ns) {
  slot.retry_ns = at_ns;
  if (!slot.deferred) {
    slot.deferred = true;
    deferred_.push_back(&slot);
  }
}

void AuthWorker::next_auth(Slot& slot) {
  if (config_.reconnect) {
    for (Connection& conn : slot.connections) {
      close_connection(conn, /*send_unbind=*/true);
    }
  }
  if (interval_ns_ == 0) {
    start_auth(slot, monotonic_ns());
    return;
  }
  // Open loop: take the oldest auth that is due (its latency counts the wait), else idle.
  if (started_ < due_) {
    const std::int64_t intended =
        config_.rate_start_ns + static_cast<std::int64_t>(started_) * interval_ns_;
    ++started_;
    start_auth(slot, intended);
    return;
  }
  idle_.push_back(&slot);
}

}  // namespace numadir::perf
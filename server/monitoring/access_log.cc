// server/monitoring/access_log.cc: see access_log.h.
#include "server/monitoring/access_log.h"

#include <pthread.h>

#include <algorithm>
#include <ctime>
#include <limits>

namespace numadir::server {
namespace {

std::int64_t wall_offset_ns() {
  timespec wall{};
  clock_gettime(CLOCK_REALTIME, &wall);
  const std::int64_t realtime = std::int64_t{wall.tv_sec} * 1000000000 + wall.tv_nsec;
  return realtime - monotonic_ns();
}

}  // namespace

Result<LogLevel> parse_log_level(std::string_view text) {
  if (text == "off") {
    return LogLevel::kOff;
  }
  if (text == "stats") {
    return LogLevel::kStats;
  }
  if (text == "debug") {
    return LogLevel::kDebug;
  }
  return invalid_argument("\"" + std::string(text) + "\": must be \"off\", \"stats\" or \"debug\"");
}

void LogWriter::write(const Record& record) {
  encode_record(record, scratch_);
  if (ring_.write_available() < scratch_.size()) {
    dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return;
  }
  ring_.push(scratch_.data(), scratch_.size());  // Whole: only this thread pushes.
  // An exchange, not a load: with the formatting thread's exchange before it checks the rings
  // (run()), either it sees this record or this sees it going to sleep.
  if (asleep_.exchange(false, std::memory_order_acq_rel)) {
    log_.wake();
  }
  if (!hurried_.load(std::memory_order_relaxed) && ring_.write_available() < log_.ring_bytes_ / 2) {
    hurried_.store(true, std::memory_order_relaxed);
    log_.hurry();
  }
}

Result<std::unique_ptr<AccessLog>> AccessLog::open(const std::filesystem::path& path,
                                                   LogFormat format, std::size_t ring_bytes) {
  Result<std::unique_ptr<LogFile>> file = LogFile::open(path);
  if (!file.ok()) {
    return file.status();
  }
  std::unique_ptr<AccessLog> log(new AccessLog(std::move(*file), format, ring_bytes));
  log->thread_ = std::thread([raw = log.get()] { raw->run(); });
  pthread_setname_np(log->thread_.native_handle(), "log-format");
  return log;
}

AccessLog::AccessLog(std::unique_ptr<LogFile> file, LogFormat format, std::size_t ring_bytes)
    : ring_bytes_(ring_bytes), file_(std::move(file)), formatter_(format) {
  shared_ = &make_writer();
}

AccessLog::~AccessLog() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_cv_.notify_one();
  thread_.join();
  // file_ then writes what it holds as it is destroyed.
}

LogWriter& AccessLog::make_writer() {
  std::lock_guard lock(writers_mu_);
  writers_.push_back(std::unique_ptr<LogWriter>(new LogWriter(*this, ring_bytes_)));
  return *writers_.back();
}

void AccessLog::write_shared(const Record& record) {
  std::lock_guard lock(shared_mu_);
  shared_->write(record);
}

void AccessLog::message(std::string_view text) {
  Record record;
  record.kind = RecordKind::kMessage;
  record.time_ns = monotonic_ns();
  record.strings[0] = text;
  write_shared(record);
}

std::uint64_t AccessLog::dropped() const {
  std::uint64_t dropped = file_->dropped();
  std::lock_guard lock(writers_mu_);
  for (const auto& writer : writers_) {
    dropped += writer->dropped_.load(std::memory_order_relaxed);
  }
  return dropped;
}

void AccessLog::flush() {
  {
    std::unique_lock lock(mu_);
    const std::uint64_t target = ++flush_requested_;
    wake_cv_.notify_one();
    flushed_cv_.wait(lock, [&] { return flush_done_ >= target; });
  }
  file_->flush();
}

void AccessLog::wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  wake_cv_.notify_one();
}

void AccessLog::hurry() {
  hurry_.store(true, std::memory_order_relaxed);
  { std::lock_guard lock(mu_); }
  wake_cv_.notify_one();
}

bool AccessLog::sleep_if_empty() {
  std::lock_guard lock(writers_mu_);
  bool empty = true;
  for (const auto& writer : writers_) {
    writer->asleep_.exchange(true, std::memory_order_acq_rel);  // Pairs with LogWriter::write.
    empty = empty && writer->ring_.read_available() == 0;
  }
  return empty;
}

bool AccessLog::drain(std::int64_t watermark) {
  bool drained = false;
  std::uint64_t dropped = file_->dropped();
  hurry_.store(false, std::memory_order_relaxed);
  {
    std::lock_guard lock(writers_mu_);
    for (const auto& writer : writers_) {
      dropped += writer->dropped_.load(std::memory_order_relaxed);
      writer->hurried_.store(false, std::memory_order_relaxed);
      // Each push was one whole record, made visible at once: what is available is whole.
      const std::size_t available = writer->ring_.read_available();
      if (available == 0) {
        continue;
      }
      const std::size_t at = held_.size();
      held_.resize(at + available);
      writer->ring_.pop(held_.data() + at, available);
      drained = true;
    }
  }
  order_.clear();
  const std::string_view held = held_;
  for (std::size_t at = 0; at < held.size();) {
    const std::uint32_t size = encoded_size(held.substr(at));
    order_.push_back({encoded_time(held.substr(at)), static_cast<std::uint32_t>(at), size});
    at += size;
  }
  std::stable_sort(order_.begin(), order_.end(),
                   [](const Held& a, const Held& b) { return a.time_ns < b.time_ns; });
  formatter_.set_wall_offset(wall_offset_ns());
  lines_.clear();
  kept_.clear();
  for (const Held& record : order_) {
    const std::string_view bytes = held.substr(record.at, record.size);
    if (record.time_ns < watermark) {
      formatter_.append_line(decode_record(bytes), lines_);
    } else {
      kept_.append(bytes);
    }
  }
  if (dropped > dropped_reported_) {
    Record report;
    report.time_ns = monotonic_ns();
    const std::string text = "access log: " + std::to_string(dropped - dropped_reported_) +
                             " lines dropped (the log fell behind)";
    report.strings[0] = text;
    formatter_.append_line(report, lines_);
    dropped_reported_ = dropped;
  }
  if (!lines_.empty()) {
    file_->append_taking(lines_);
  }
  held_.swap(kept_);
  return drained || !held_.empty();
}

void AccessLog::run() {
  for (;;) {
    std::uint64_t flush_target = 0;
    bool stopping = false;
    {
      std::lock_guard lock(mu_);
      flush_target = flush_requested_;
      stopping = stopping_;
    }
    // Taken before the rings are read: a record older than this that some thread wrote after
    // another is visible now, so everything the batch formats is in order.
    const std::int64_t watermark =
        stopping ? std::numeric_limits<std::int64_t>::max() : monotonic_ns();
    const bool busy = drain(watermark);
    {
      std::lock_guard lock(mu_);
      if (flush_target > flush_done_) {
        flush_done_ = flush_target;
        flushed_cv_.notify_all();
      }
    }
    if (stopping) {
      return;
    }
    std::unique_lock lock(mu_);
    const auto asked = [&] {
      return stopping_ || flush_requested_ > flush_done_ || hurry_.load(std::memory_order_relaxed);
    };
    if (busy) {
      // Records are coming: let them gather for a batch.
      wake_cv_.wait_for(lock, kBatchInterval, asked);
      continue;
    }
    woken_ = false;
    lock.unlock();
    if (!sleep_if_empty()) {
      continue;
    }
    lock.lock();
    wake_cv_.wait(lock, [&] { return woken_ || asked(); });
  }
}

}  // namespace numadir::server

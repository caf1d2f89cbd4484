// server/formats/ldif_source.cc: the LdifSource implementations (see detail/ldif_source.h).
//
// Thread contract: as detail/ldif_source.h; a source belongs to its reader's thread.
#include "server/formats/detail/ldif_source.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace numadir::server::detail {
namespace {

class StreamSource final : public LdifSource {
 public:
  explicit StreamSource(std::istream& in) : in_(in) {}
  Result<std::size_t> read(char* out, std::size_t n) override {
    if (in_.bad()) {
      return Status(StatusCode::kIo, "read error on the input stream");
    }
    if (in_.eof()) {
      return std::size_t{0};
    }
    in_.read(out, static_cast<std::streamsize>(n));
    if (in_.bad()) {
      return Status(StatusCode::kIo, "read error on the input stream");
    }
    return static_cast<std::size_t>(in_.gcount());
  }

 private:
  std::istream& in_;
};

class MemorySource final : public LdifSource {
 public:
  explicit MemorySource(std::string_view text) : text_(text) {}
  Result<std::size_t> read(char* out, std::size_t n) override {
    const std::size_t count = std::min(n, text_.size() - pos_);
    std::memcpy(out, text_.data() + pos_, count);
    pos_ += count;
    return count;
  }
  std::optional<std::uint64_t> size_bytes() const override { return text_.size(); }

 private:
  const std::string_view text_;
  std::size_t pos_ = 0;
};

class FileSource final : public LdifSource {
 public:
  explicit FileSource(std::FILE* file) : file_(file) {}
  Result<std::size_t> read(char* out, std::size_t n) override {
    const std::size_t count = std::fread(out, 1, n, file_);
    if (count == 0 && std::ferror(file_) != 0) {
      return Status(StatusCode::kIo, "read error on the input file");
    }
    return count;
  }
  std::optional<std::uint64_t> size_bytes() const override {
    return regular_file_size(fileno(file_));
  }

  static std::optional<std::uint64_t> regular_file_size(int fd) {
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      return std::nullopt;
    }
    return static_cast<std::uint64_t>(st.st_size);
  }

 private:
  std::FILE* const file_;
};

class FdSource final : public LdifSource {
 public:
  FdSource(int fd, bool owned) : fd_(fd), owned_(owned) {}
  FdSource(const FdSource&) = delete;
  FdSource& operator=(const FdSource&) = delete;
  ~FdSource() override {
    if (owned_) {
      ::close(fd_);
    }
  }
  Result<std::size_t> read(char* out, std::size_t n) override {
    for (;;) {
      const ssize_t got = ::read(fd_, out, n);
      if (got >= 0) {
        return static_cast<std::size_t>(got);
      }
      if (errno != EINTR) {
        return Status(StatusCode::kIo, "read error on the input: " + errno_text(errno));
      }
    }
  }
  std::optional<std::uint64_t> size_bytes() const override {
    return FileSource::regular_file_size(fd_);
  }

 private:
  const int fd_;
  const bool owned_;
};

}  // namespace

std::unique_ptr<LdifSource> stream_source(std::istream& in) {
  return std::make_unique<StreamSource>(in);
}

std::unique_ptr<LdifSource> memory_source(std::string_view text) {
  return std::make_unique<MemorySource>(text);
}

std::unique_ptr<LdifSource> file_source(std::FILE* file) {
  return std::make_unique<FileSource>(file);
}

std::unique_ptr<LdifSource> fd_source(int fd, bool owned) {
  return std::make_unique<FdSource>(fd, owned);
}

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

}  // namespace numadir::server::detail

// numadir import: LDIF into an empty directory, in one transaction, with progress. The LDIF is
// parsed on this thread, which also checks each userPassword value's cost against the
// [passwords] ceilings, while the directory's bulk importer checks, encodes and stores it.
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <span>
#include <sstream>
#include <string>

#include "server/commands/commands.h"
#include "server/commands/opened_directory.h"
#include "server/formats/config.h"
#include "server/formats/ldif_reader.h"
#include "server/operations/password_cost.h"

namespace numadir::server {
namespace {

using Clock = std::chrono::steady_clock;

std::string format_duration(double seconds) {
  const auto total = static_cast<long long>(seconds + 0.5);
  std::ostringstream out;
  out << total / 3600 << ":" << std::setw(2) << std::setfill('0') << (total / 60) % 60 << ":"
      << std::setw(2) << std::setfill('0') << total % 60;
  return out.str();
}

// Reports progress: a bar redrawn in place on a terminal, a line every few seconds otherwise.
class Progress {
 public:
  Progress(std::ostream& err, bool enabled, bool terminal)
      : err_(err), enabled_(enabled), terminal_(terminal), start_(Clock::now()), last_(start_) {}

  void update(std::uint64_t entries, std::uint64_t bytes, std::optional<std::uint64_t> total) {
    if (!enabled_) {
      return;
    }
    const auto now = Clock::now();
    const auto interval = terminal_ ? std::chrono::milliseconds(200) : std::chrono::seconds(5);
    if (now - last_ < interval) {
      return;
    }
    last_ = now;
    draw(entries, bytes, total, now);
  }

  // Clears the progress bar so that a message can take its line.
  void interrupt() {
    if (enabled_ && terminal_) {
      err_ << "\r\033[K";
    }
  }

  void finish(std::uint64_t entries) {
    const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    if (enabled_ && terminal_) {
      err_ << "\r\033[K";
    }
    err_ << "import: " << entries << " entries in " << std::fixed << std::setprecision(1) << seconds
         << " s (" << static_cast<long long>(entries / std::max(seconds, 1e-9)) << " entries/s)\n";
  }

 private:
  void draw(std::uint64_t entries, std::uint64_t bytes, std::optional<std::uint64_t> total,
            Clock::time_point now) {
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = entries / std::max(seconds, 1e-9);
    std::ostringstream line;
    line << entries << " entries, " << static_cast<long long>(rate) << " entries/s";
    if (total.has_value() && *total > 0) {
      const double fraction = std::min(1.0, static_cast<double>(bytes) / *total);
      if (terminal_) {
        constexpr int kWidth = 30;
        const int filled = static_cast<int>(fraction * kWidth);
        line.str("");
        line << "[" << std::string(filled, '#') << std::string(kWidth - filled, ' ') << "] "
             << entries << " entries, " << static_cast<long long>(rate) << "/s";
      }
      line << ", " << static_cast<int>(fraction * 100) << "%";
      if (fraction > 0) {
        line << ", ETA " << format_duration(seconds / fraction - seconds);
      }
    }
    if (terminal_) {
      err_ << "\r\033[K" << line.str() << std::flush;
    } else {
      err_ << "import: " << line.str() << "\n" << std::flush;
    }
  }

  std::ostream& err_;
  const bool enabled_;
  const bool terminal_;
  const Clock::time_point start_;
  Clock::time_point last_;
};

// Returns: the first userPassword value of `entry` over a ceiling of `limits`, described
//   ("userPassword: argon2 memory ... over passwords.max_argon2_memory_kib (65536)"), and how
//   many values of the entry are; nullopt when none is. `user_password`: the schema's type.
struct CostlyValues {
  std::string first;
  std::uint64_t count = 0;
};
std::optional<CostlyValues> costly_values(const schema::Entry& entry, const schema::Schema& schema,
                                          const schema::AttributeType* user_password,
                                          const backend::PasswordCostLimits& limits) {
  std::optional<CostlyValues> found;
  if (user_password == nullptr) {
    return found;
  }
  for (const schema::EntryAttribute& attribute : entry.attributes) {
    if (schema.attribute_type(schema::split_description(attribute.description).first) !=
        user_password) {
      continue;
    }
    for (const std::string& value : attribute.values) {
      const Status checked = check_password_costs(std::span<const std::string>(&value, 1), limits);
      if (checked.ok()) {
        continue;
      }
      if (!found.has_value()) {
        found = CostlyValues{checked.message(), 0};
      }
      ++found->count;
    }
  }
  return found;
}

// Returns: what is wrong with the entry `failure` names, for "<file>:<line>: dn "...": ",
//   naming the other entry a duplicate or orphan needs (as slapadd names the missing parent).
std::string failure_text(const backend::Directory::ImportFailure& failure) {
  const StatusCode code = failure.status.code();
  if (code == StatusCode::kEntryAlreadyExists && failure.earlier_tag.has_value()) {
    std::string text = "already at line " + std::to_string(*failure.earlier_tag);
    if (!failure.earlier_dn.empty() && failure.earlier_dn != failure.dn) {
      text += " (as \"" + failure.earlier_dn + "\")";
    }
    return text;
  }
  std::string text(status_code_name(code));
  if (code == StatusCode::kNoSuchObject && !failure.missing_parent.empty()) {
    return text + ": its parent \"" + failure.missing_parent +
           "\" is not in the LDIF before it (parents come before their children)";
  }
  return text + ": " + failure.status.message();
}

}  // namespace

int run_import(const ImportOptions& options, std::ostream& out, std::ostream& err) {
  (void)out;
  auto config = load_config(options.config);
  if (!config.ok()) {
    err << "numadir import: " << config.status().message() << "\n";
    return 1;
  }
  // The input first: a misspelt LDIF path must not leave an empty database behind.
  std::unique_ptr<LdifReader> reader_owned;
  if (options.input == "-") {
    reader_owned = std::make_unique<LdifReader>(STDIN_FILENO);
  } else {
    auto file = LdifReader::open_file(options.input);
    if (!file.ok()) {
      err << "numadir import: " << file.status().message() << "\n";
      return 1;
    }
    reader_owned = std::move(*file);
  }
  LdifReader& reader = *reader_owned;
  // MDB_WRITEMAP for this process only: the import is one large write transaction.
  config->database.write_map = true;
  auto opened = open_directory(*config, backend::OpenMode::kCreate);
  if (!opened.ok()) {
    err << "numadir import: " << opened.status().message() << "\n";
    return 1;
  }
  // Said here, where the key is known (the importer refuses too, should entries appear
  // meanwhile).
  if (auto held = opened->directory->entry_count(); !held.ok() || *held != 0) {
    if (!held.ok()) {
      err << "numadir import: " << held.status().message() << "\n";
    } else {
      err << "numadir import: database.path " << config->database.path.string() << " already holds "
          << *held << (*held == 1 ? " entry" : " entries")
          << ": import loads only into an empty database; move it away or point database.path "
             "elsewhere\n";
    }
    return 1;
  }
  const std::string name = options.input == "-" ? "<stdin>" : options.input;
  int status = 1;
  {
    // This thread parses the LDIF; the importer's workers check and encode the entries and
    // its writer stores them, in input order, in one transaction.
    auto importer = opened->directory->begin_bulk_import(backend::UpdateContext{}, {});
    if (!importer.ok()) {
      err << "numadir import: " << importer.status().message() << "\n";
    } else {
      Progress progress(err, options.progress, isatty(STDERR_FILENO) == 1);
      const schema::Schema& schema = opened->directory->schema();
      const schema::AttributeType* user_password = schema.attribute_type("userPassword");
      std::uint64_t costly_kept = 0;
      std::string first_costly;                   // The first value kept, with its entry.
      std::optional<std::string> costly_refused;  // "<line>: dn ...: <why>": stops the import.
      schema::Entry entry;
      std::optional<Status> bad_input;
      while (true) {
        auto more = reader.next(entry);
        if (!more.ok()) {
          bad_input = more.status();
          break;
        }
        if (!*more) {
          break;
        }
        // Checked here, where the record's line is known: binds would refuse such a value
        // without hashing it, so it is a mistake unless asked for.
        if (std::optional<CostlyValues> costly =
                costly_values(entry, schema, user_password, config->password_limits)) {
          const std::string where =
              std::to_string(reader.record_line()) + ": dn \"" + entry.dn + "\": " + costly->first;
          if (!options.allow_costly_hashes) {
            costly_refused = where +
                             " (binds would refuse it without checking it; raise the "
                             "ceiling, or keep such values with --allow-costly-hashes)";
            break;
          }
          if (costly_kept == 0) {
            first_costly = where;
          }
          costly_kept += costly->count;
        }
        if (!(*importer)->add(entry, reader.record_line())) {
          break;
        }
        progress.update(reader.records_read(), reader.bytes_consumed(), reader.input_size_bytes());
      }
      // An entry that failed comes before a bad record: the entries queued are checked first.
      Status finished;
      const backend::Directory::ImportFailure* failure = nullptr;
      const bool aborted = bad_input.has_value() || costly_refused.has_value();
      if (aborted) {
        failure = (*importer)->abort();
      } else {
        finished = (*importer)->finish();
        failure = (*importer)->failure();
      }
      if (failure != nullptr || aborted || !finished.ok()) {
        progress.interrupt();
      }
      if (failure != nullptr) {
        err << "numadir import: " << name << ":" << failure->tag << ": dn \"" << failure->dn
            << "\": " << failure_text(*failure) << "\n";
      } else if (costly_refused.has_value()) {
        err << "numadir import: " << name << ":" << *costly_refused << "\n";
      } else if (bad_input.has_value()) {
        err << "numadir import: " << name << ": " << bad_input->message() << "\n";
      } else if (!finished.ok()) {
        err << "numadir import: " << finished.message() << "\n";
      }
      if (failure != nullptr || aborted) {
        err << "numadir import: nothing was imported\n";
      } else if (finished.ok()) {
        progress.finish(reader.records_read());
        status = 0;
      }
      if (status == 0 && costly_kept > 0) {
        err << "numadir import: kept " << costly_kept
            << " userPassword value(s) over the [passwords] cost ceilings (--allow-costly-hashes);"
               " binds refuse them without checking them. The first: "
            << name << ":" << first_costly << "\n";
      }
    }
  }
  return status;
}

}  // namespace numadir::server

// numadir passwd: print a userPassword value for a password, like slappasswd.
#include <termios.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <string>

#include "backend/password_scheme.h"
#include "server/commands/commands.h"

namespace numadir::server {
namespace {

// Reads one line from the terminal without echo. Returns: false at end of input.
bool read_hidden_line(std::istream& in, std::ostream& err, const char* prompt, std::string& line) {
  err << prompt << std::flush;
  termios saved{};
  const bool terminal = isatty(STDIN_FILENO) == 1 && tcgetattr(STDIN_FILENO, &saved) == 0;
  if (terminal) {
    termios quiet = saved;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
  }
  const bool ok = static_cast<bool>(std::getline(in, line));
  if (terminal) {
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
    err << "\n";
  }
  return ok;
}

}  // namespace

int run_passwd(const PasswdOptions& options, std::istream& in, std::ostream& out,
               std::ostream& err) {
  auto scheme = backend::parse_password_scheme(options.scheme);
  if (!scheme.ok()) {
    err << "numadir passwd: " << scheme.status().message() << "\n";
    return 2;
  }
  std::string secret;
  if (options.secret.has_value()) {
    secret = *options.secret;
  } else if (options.secret_file.has_value()) {
    std::ifstream file(*options.secret_file, std::ios::binary);
    if (!file || !std::getline(file, secret)) {
      err << "numadir passwd: " << *options.secret_file << ": cannot read a password\n";
      return 1;
    }
  } else {
    std::string again;
    if (!read_hidden_line(in, err, "New password: ", secret) ||
        !read_hidden_line(in, err, "Re-enter new password: ", again)) {
      err << "numadir passwd: no password given\n";
      return 1;
    }
    if (secret != again) {
      err << "numadir passwd: the passwords do not match\n";
      return 1;
    }
  }
  if (secret.empty()) {
    err << "numadir passwd: the password is empty\n";
    return 1;
  }
  auto hashed = backend::hash_password(secret, *scheme);
  if (!hashed.ok()) {
    err << "numadir passwd: " << hashed.status().message() << "\n";
    return 1;
  }
  out << *hashed << "\n";
  return 0;
}

}  // namespace numadir::server

// tests/read_file.h: a file's whole text, for tests that check what a program wrote.
//
// Thread contract: call from any test thread.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace numadir::testing {

// Returns: the file's bytes, or "" when it cannot be read.
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace numadir::testing

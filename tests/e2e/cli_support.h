// What the CLI end-to-end tests share: running a shell command and reading its output, and a
// temporary input file that removes itself.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace harness::e2e {

struct CliRun {
  int exit_code;
  std::string out;
};

// Runs `command` through the shell and returns its exit code (-1 if it did not exit) and stdout.
inline CliRun Shell(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr)
    return {-1, ""};
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0)
    out.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// How many times `needle` stands in `haystack`, without overlaps.
inline std::size_t Occurrences(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size()))
    ++n;
  return n;
}

// `text` in single quotes for a shell, each quote inside written as '\''.
inline std::string ShellQuoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'')
      out.append("'\\''");
    else
      out.push_back(c);
  }
  return out.append("'");
}

class TempFile {
 public:
  explicit TempFile(const std::string& contents) {
    path_ = std::filesystem::temp_directory_path() /
            ("harness-e2e-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::ofstream(path_, std::ios::binary) << contents;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::string quoted() const {
    std::string quoted = "'";
    quoted.append(path_.string()).append("'");
    return quoted;
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

}  // namespace harness::e2e

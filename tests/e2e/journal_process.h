// Helpers for the journal's end-to-end tests: run the harness binary as a real child process,
// read its standard output line by line, kill it.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/build_paths.h"

extern char** environ;

namespace harness::journal_e2e {

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "harness-journal-e2e-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr)
      path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The next whole line read from `fd` (`buffer` holds what was read past it), without its
// newline; false at end of output (a last line without a newline is not returned).
inline bool ReadLineFrom(int fd, std::string& buffer, std::string& line) {
  for (;;) {
    const auto nl = buffer.find('\n');
    if (nl != std::string::npos) {
      line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      return true;
    }
    char chunk[8192];
    const ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
}

// Waits for the child `pid` to end; returns its raw wait status.
inline int WaitStatus(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// How a child is started beyond its arguments.
struct ChildIo {
  bool keep_stderr = false;      // standard error on the output pipe too (else /dev/null)
  std::string stdin_path;        // standard input from this file (empty: inherited)
  std::vector<std::string> env;  // the whole environment, "NAME=value" (empty: inherited)
};

// A running `harness` with its standard output on a pipe (standard error is discarded unless
// `keep_stderr`).
class Child {
 public:
  explicit Child(const std::vector<std::string>& args, bool keep_stderr = false)
      : Child(args, ChildIo{keep_stderr, {}, {}}) {}
  Child(const std::vector<std::string>& args, const ChildIo& io) {
    const bool keep_stderr = io.keep_stderr;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
      return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    if (keep_stderr)
      posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    else
      posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    if (!io.stdin_path.empty())
      posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, io.stdin_path.c_str(), O_RDONLY, 0);
    std::vector<std::string> env_strings = io.env;
    std::vector<char*> envp;
    for (auto& e : env_strings)
      envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_strings = {::harness::build_paths::HarnessBinary()};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_strings)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    char** child_env = io.env.empty() ? environ : envp.data();
    if (posix_spawn(&pid_, ::harness::build_paths::HarnessBinary(), &actions, nullptr, argv.data(),
                    child_env) != 0)
      pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    out_ = fds[0];
  }
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      Wait();
    }
    if (out_ >= 0)
      close(out_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // True once the child has ended (it is not reaped: Wait() still returns its status).
  bool Ended() const {
    if (pid_ <= 0)
      return true;
    siginfo_t info{};
    return waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == pid_;
  }

  // The next whole line of output without its newline; false at end of output (a last line
  // without a newline, cut by a crash, is not returned).
  bool ReadLine(std::string& line) { return ReadLineFrom(out_, buffer_, line); }

  void Kill() {
    if (pid_ > 0)
      kill(pid_, SIGKILL);
  }

  // Waits for the child to end; returns the raw wait status.
  int Wait() {
    if (pid_ > 0) {
      status_ = WaitStatus(pid_);
      pid_ = -1;
    }
    return status_;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  int status_ = 0;
  std::string buffer_;
};

struct ProcessRun {
  int exit_code = -1;
  std::vector<std::string> lines;
};

// Runs the binary to completion and collects its output lines.
inline ProcessRun Harness(const std::vector<std::string>& args, bool keep_stderr = false) {
  Child child(args, keep_stderr);
  ProcessRun run;
  std::string line;
  while (child.ReadLine(line))
    run.lines.push_back(line);
  const int status = child.Wait();
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

}  // namespace harness::journal_e2e

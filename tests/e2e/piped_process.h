// A `harness` child driven over pipes, as a user at a pipe drives it: lines written to its
// standard input, its standard output and standard error read back line by line.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "journal_process.h"
#include "support/build_paths.h"

extern char** environ;

namespace harness::e2e {

// A `harness` child with standard input and output (and standard error) on pipes.
class Process {
 public:
  explicit Process(const std::vector<std::string>& args) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
      return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
    std::vector<std::string> strings = {::harness::build_paths::HarnessBinary()};
    strings.insert(strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : strings)
      argv.push_back(s.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, ::harness::build_paths::HarnessBinary(), &actions, nullptr, argv.data(),
                    environ) != 0)
      pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    in_ = in[1];
    out_ = out[0];
  }
  ~Process() {
    CloseInput();
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      Wait();
    }
    if (out_ >= 0)
      close(out_);
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  void Write(const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = write(in_, text.data() + done, text.size() - done);
      if (n <= 0)
        return;
      done += static_cast<std::size_t>(n);
    }
  }
  void CloseInput() {
    if (in_ >= 0)
      close(in_);
    in_ = -1;
  }
  // Reads output until a line contains `text` (true) or the output ends (false).
  bool WaitForLine(const std::string& text) {
    std::string line;
    while (ReadLine(line)) {
      if (line.find(text) != std::string::npos)
        return true;
    }
    return false;
  }
  // The rest of the output, to its end.
  std::string Rest() {
    std::string all, line;
    while (ReadLine(line))
      all.append(line).append("\n");
    return all;
  }
  const std::string& seen() const { return seen_; }
  pid_t pid() const { return pid_; }
  void Signal(int signal) {
    if (pid_ > 0)
      kill(pid_, signal);
  }
  // The exit code, or -1 when it did not exit (a signal).
  int Wait() {
    if (pid_ > 0) {
      const int status = journal_e2e::WaitStatus(pid_);
      pid_ = -1;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    return exit_code_;
  }

 private:
  bool ReadLine(std::string& line) {
    if (!journal_e2e::ReadLineFrom(out_, buffer_, line))
      return false;
    seen_.append(line).append("\n");
    return true;
  }

  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  int exit_code_ = -1;
  std::string buffer_;
  std::string seen_;
};

}  // namespace harness::e2e

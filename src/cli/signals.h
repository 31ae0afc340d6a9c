// How the commands that run work (`harness compact`, `harness chat`) end on SIGINT, SIGTERM and
// SIGHUP (docs/cli.md "Signals and exit codes" has the behaviour and its proofs).
//
// Contract:
// - TerminationSignalBlock blocks the three signals in the calling thread for its lifetime and
//   then restores the thread's mask. main constructs one after parsing, before any thread
//   starts, and only for the commands that handle the signals: every thread such a command
//   starts (the runtime's executor, libcurl's resolver) inherits the block, so no signal
//   ends the process wherever it happens to land. The other commands keep the default action.
// - SignalWatch (the three must be blocked; made before the command starts threads of its own)
//   takes them on a thread of its own (signalfd). Once armed, the first one records its exit
//   code (128 + the signal: 130, 143, 129) and requests stop on token(): the command turns that
//   into an interrupt of its work with a std::stop_callback it owns (registered after the work
//   has started, it runs at once if the signal came first).
//   The stop callbacks run on another thread of the watch, so a callback that blocks (a
//   journal that does not answer) never keeps the watch from taking a second signal.
// - Until Arm() a signal ends the process at once with 128 + the signal, as the default action
//   would (the command has nothing to clean up yet: it reads its input, checks its flags). The
//   command arms the watch before it opens anything a signal must not leave behind (the
//   journal, the session's lease).
// - A second signal ends the process at once (_exit) with 128 + that signal, after writing
//   `terminal_reset` to standard output when it is a terminal and one line to standard error:
//   nothing is cleaned up, so the session's lease stays held until it expires.
// - The destructor stops the watch's threads; a signal that arrives afterwards stays pending
//   (still blocked) until main's TerminationSignalBlock ends as the command returns: then it
//   takes its default action.
// Thread safety: every method may be called from any thread.
#pragma once

#include <signal.h>

#include <atomic>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>

namespace harness::cli {

class TerminationSignalBlock {
 public:
  TerminationSignalBlock();
  ~TerminationSignalBlock();
  TerminationSignalBlock(const TerminationSignalBlock&) = delete;
  TerminationSignalBlock& operator=(const TerminationSignalBlock&) = delete;

 private:
  sigset_t previous_{};
};

class SignalWatch {
 public:
  // `command` prefixes the line a second signal writes ("harness chat").
  SignalWatch(std::string_view command, std::string_view terminal_reset);
  ~SignalWatch();
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

  // From now on the first signal requests stop instead of ending the process.
  void Arm() { armed_.store(true); }
  std::stop_token token() const { return stop_.get_token(); }
  // 0 until the first signal; then 128 + that signal.
  int exit_code() const { return exit_code_.load(); }

 private:
  void Watch(std::stop_token stop);

  std::string command_;
  std::string terminal_reset_;
  std::stop_source stop_;  // requested on the first signal
  std::atomic<int> exit_code_{0};
  std::atomic<bool> armed_{false};
  int signals_ = -1;          // signalfd
  int wake_ = -1;             // eventfd: the destructor wakes the watch with it
  std::jthread interrupter_;  // runs the stop callbacks; started by the first signal
  std::jthread watch_;        // last: started after the state it reads, stopped first
};

// "SIGINT", "SIGTERM", "SIGHUP" for an exit code of SignalWatch.
std::string_view SignalNameOfExitCode(int exit_code);

}  // namespace harness::cli

#include "signals.h"

#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace harness::cli {
namespace {

constexpr int kExitSignalBase = 128;  // what shells report for a process ended by a signal

sigset_t TerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

// write(2) only: the process is about to _exit, and another thread may hold stdio's locks.
void WriteAll(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

TerminationSignalBlock::TerminationSignalBlock() {
  const sigset_t set = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &set, &previous_);
}

TerminationSignalBlock::~TerminationSignalBlock() {
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

std::string_view SignalNameOfExitCode(int exit_code) {
  switch (exit_code - kExitSignalBase) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

SignalWatch::SignalWatch(std::string_view command, std::string_view terminal_reset)
    : command_(command), terminal_reset_(terminal_reset) {
  const sigset_t set = TerminationSignals();
  signals_ = ::signalfd(-1, &set, SFD_CLOEXEC);
  wake_ = ::eventfd(0, EFD_CLOEXEC);
  // Without them the signals get their default action back (in this thread and the ones it
  // starts: the watch is made before the command starts any): the command still runs, it only
  // cannot end cleanly on one.
  if (signals_ < 0 || wake_ < 0) {
    const sigset_t unblock = TerminationSignals();
    pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
    return;
  }
  watch_ = std::jthread([this](std::stop_token stop) { Watch(stop); });
}

SignalWatch::~SignalWatch() {
  if (watch_.joinable()) {
    watch_.request_stop();
    const std::uint64_t one = 1;
    WriteAll(wake_, std::string_view(reinterpret_cast<const char*>(&one), sizeof one));
    watch_.join();
  }
  // Only the watch thread starts it, and that thread has ended.
  if (interrupter_.joinable())
    interrupter_.join();
  if (signals_ >= 0)
    ::close(signals_);
  if (wake_ >= 0)
    ::close(wake_);
}

void SignalWatch::Watch(std::stop_token stop) {
  while (!stop.stop_requested()) {
    pollfd fds[2] = {{signals_, POLLIN, 0}, {wake_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      return;
    }
    if ((fds[0].revents & POLLIN) == 0)
      continue;  // the destructor's wake: the loop condition ends the watch
    signalfd_siginfo info{};
    if (::read(signals_, &info, sizeof info) != static_cast<ssize_t>(sizeof info))
      continue;
    const int code = kExitSignalBase + static_cast<int>(info.ssi_signo);
    int none = 0;
    if (armed_.load() && exit_code_.compare_exchange_strong(none, code)) {
      // The command's stop callbacks may block (they interrupt through the journal): they run
      // on a thread of their own while this one waits for a second signal.
      interrupter_ = std::jthread([this] { stop_.request_stop(); });
      continue;
    }
    if (!armed_.load())
      ::_exit(code);  // nothing to clean up, nothing drawn
    WriteAll(STDOUT_FILENO, isatty(STDOUT_FILENO) == 1 ? terminal_reset_ : "");
    WriteAll(STDERR_FILENO,
             fmt::format("{}: a second signal ({}): exiting at once; the session's lease stays "
                         "held until it expires (or --take-over takes it)\n",
                         command_, SignalNameOfExitCode(code)));
    ::_exit(code);
  }
}

}  // namespace harness::cli

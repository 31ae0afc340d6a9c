#include "chat_console.h"

#include <chrono>
#include <cstdio>
#include <utility>

namespace harness::cli {
namespace {

// Fast enough to look alive, slow enough to cost nothing.
constexpr std::chrono::milliseconds kTick{120};
constexpr std::string_view kFrames = "|/-\\";

void Write(std::FILE* to, std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), to);
}

}  // namespace

ChatConsole::ChatConsole(bool progress) {
  if (progress)
    timer_ = std::jthread([this](std::stop_token stop) { Tick(stop); });
}

ChatConsole::~ChatConsole() {
  if (timer_.joinable()) {
    timer_.request_stop();
    timer_.join();
  }
  std::lock_guard lock(mutex_);
  EraseIndicatorLocked();
  std::fflush(stdout);
}

void ChatConsole::EraseIndicatorLocked() {
  if (!drawn_)
    return;
  // Carriage return, then erase to the end of the line: the cursor is back where the
  // indicator started.
  Write(stdout, kEraseLine);
  drawn_ = false;
}

void ChatConsole::BreakStreamLocked() {
  if (!answer_open_)
    return;
  // The held-back bytes of a cut character stay held: the next piece may complete them.
  Write(stdout, "\n");
  answer_open_ = false;
  answer_broken_ = true;
  changed_.notify_all();  // the indicator may be drawn again
}

void ChatConsole::Stream(std::string_view piece) {
  std::lock_guard lock(mutex_);
  EraseIndicatorLocked();
  if (!answer_open_) {
    Write(stdout, answer_broken_ ? "assistant (continued): " : "assistant: ");
    answer_open_ = true;
  }
  answer_streamed_ = true;
  Write(stdout, answer_.Next(piece));
  std::fflush(stdout);
}

bool ChatConsole::EndStream() {
  std::lock_guard lock(mutex_);
  const std::string rest = answer_.Finish();
  if (answer_open_) {
    Write(stdout, rest);
    Write(stdout, "\n");
    std::fflush(stdout);
  }
  answer_open_ = false;
  answer_broken_ = false;
  changed_.notify_all();  // the indicator may be drawn again
  return std::exchange(answer_streamed_, false);
}

void ChatConsole::Line(std::string_view text) {
  std::lock_guard lock(mutex_);
  EraseIndicatorLocked();
  BreakStreamLocked();
  Write(stdout, TerminalText(text));
  Write(stdout, "\n");
  std::fflush(stdout);  // as it happens, also through a pipe
}

void ChatConsole::Error(std::string_view text) {
  std::lock_guard lock(mutex_);
  EraseIndicatorLocked();
  BreakStreamLocked();
  std::fflush(stdout);
  Write(stderr, TerminalText(text));
  Write(stderr, "\n");
  std::fflush(stderr);
}

void ChatConsole::SetActivity(std::string_view activity) {
  std::lock_guard lock(mutex_);
  if (activity_ == activity)
    return;
  activity_ = activity;
  if (activity_.empty())
    EraseIndicatorLocked();
  std::fflush(stdout);
  changed_.notify_all();
}

void ChatConsole::Typing(bool typing) {
  std::lock_guard lock(mutex_);
  typing_ = typing;
  if (typing) {
    // Before the editor echoes the first key: it writes where it believes the cursor is, the
    // start of the line, which is where the erased indicator leaves it.
    EraseIndicatorLocked();
    std::fflush(stdout);
  }
  changed_.notify_all();
}

void ChatConsole::SetStatus(std::function<std::optional<std::string>()> status) {
  std::lock_guard lock(mutex_);
  status_ = std::move(status);
}

void ChatConsole::Tick(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    if (activity_.empty() || answer_open_ || typing_) {
      // Idle, an answer line is open or a line is being typed: no redraws until there is
      // something to show where it cannot overwrite output.
      changed_.wait(lock, stop, [this] { return !activity_.empty() && !answer_open_ && !typing_; });
      continue;
    }
    std::string frame = "\r";
    if (std::optional<std::string> status = status_ ? status_() : std::nullopt) {
      frame.append(TerminalText(*status)).append("\x1b[K");
    } else {
      frame.push_back(kFrames[frame_++ % kFrames.size()]);
      frame.append(" ").append(activity_).append("...\x1b[K");
    }
    Write(stdout, frame);
    std::fflush(stdout);
    drawn_ = true;
    // A timer, not a synchronization: wakes early when the activity changes or on stop.
    const std::string shown = activity_;
    changed_.wait_for(lock, stop, kTick, [this, &shown] { return activity_ != shown; });
  }
}

}  // namespace harness::cli

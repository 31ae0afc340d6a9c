// ChatConsole: the terminal of `harness chat`: whole lines from any thread, and a progress
// indicator while the model or the compactor works.
//
// Contract:
// - Line(text) writes `text` and a newline to standard output, flushed, as one unit: lines from
//   different threads never interleave. Error(text) does the same on standard error. Both write
//   the text through TerminalText (terminal_text.h), whether or not the output is a terminal:
//   what the model, the journal or a server wrote is shown, never executed.
// - With progress enabled (standard output is a terminal), SetActivity("thinking") shows
//   "<spinner> thinking..." on the current line, redrawn on a timer until SetActivity(""). A
//   line written meanwhile first erases the indicator, so the indicator never ends up inside
//   printed output; the next tick draws it again below. Disabled, SetActivity only records.
// - Stream(piece) writes a piece of the model's answer as it arrives, through TerminalTextStream
//   (a character cut between pieces is held back, never shown as escaped bytes): the first piece
//   erases the indicator and opens the line "assistant: ", the next ones continue it. While an
//   answer line is open the indicator is not drawn (it would overwrite the line). A Line or
//   Error meanwhile first ends the open line with a newline, so what it prints starts a line of
//   its own; the next piece opens "assistant (continued): ". EndStream() ends the open line and
//   says whether any piece came since the last EndStream (the answer was shown as it came).
// - SetStatus(status): while an activity is shown and `status` returns a line, the indicator is
//   that line (through TerminalText) instead of "<spinner> <activity>...": a model compaction's
//   progress (compaction_progress.h), drawn, erased and redrawn as the indicator is.
// - Typing(true): a person has started a line at the terminal, which the line editor echoes at
//   the start of the current line: the indicator is erased at once and not drawn until
//   Typing(false) (the line was read), so a redraw never overwrites what was typed.
// - The destructor stops the timer thread and erases the indicator.
// Thread safety: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>

#include "terminal_text.h"

namespace harness::cli {

class ChatConsole {
 public:
  // What erases the indicator: back to the start of the line, then clear to its end. It sets
  // no terminal mode and never hides the cursor, so this is all a terminal needs to be restored.
  static constexpr std::string_view kEraseLine = "\r\x1b[K";

  explicit ChatConsole(bool progress);
  ~ChatConsole();
  ChatConsole(const ChatConsole&) = delete;
  ChatConsole& operator=(const ChatConsole&) = delete;

  void Line(std::string_view text);
  void Error(std::string_view text);
  void SetActivity(std::string_view activity);
  void SetStatus(std::function<std::optional<std::string>()> status);
  void Stream(std::string_view piece);
  bool EndStream();
  void Typing(bool typing);

 private:
  void EraseIndicatorLocked();
  void BreakStreamLocked();
  void Tick(std::stop_token stop);

  std::mutex mutex_;
  std::condition_variable_any changed_;
  std::string activity_;
  std::function<std::optional<std::string>()> status_;
  bool drawn_ = false;
  std::size_t frame_ = 0;
  TerminalTextStream answer_;     // the streamed answer's sanitizing, across pieces
  bool answer_open_ = false;      // an answer line is on the screen, not ended
  bool answer_broken_ = false;    // a line interrupted the answer: the next piece says continued
  bool answer_streamed_ = false;  // a piece came since the last EndStream
  bool typing_ = false;           // the line editor holds a line being typed
  std::jthread timer_;            // last: started after the state it reads, stopped before it goes
};

}  // namespace harness::cli

// Line editing for `harness chat` at a terminal, through libedit (docs/cli.md "Line editing").
//
// Contract:
// - LineEditor reads one message at a time from a terminal: the arrow keys move in the line
//   and through the history, Ctrl-L clears the screen, Tab completes a slash command, Ctrl-D
//   on an empty line ends the input (kEnd), and a stop request (a signal, a fault) wakes a read
//   at once (kStopped), whether or not anybody types. A line that ends in a backslash goes on
//   on the next line (the backslash is dropped, a newline kept); a bracketed paste of several
//   lines is one message, each pasted newline kept as one. A message over max_bytes is refused
//   whole (kTooLong). Each message read is added to the history; with a history file, the
//   file is rewritten (owner-only, through a temporary file renamed over it) after each one, so
//   the history outlives a crash, and the next LineEditor on that file starts from it.
// - The terminal is in libedit's raw mode only while a message is read; bracketed paste is on
//   from Open to the destructor (kBracketedPasteOff turns it off again).
// - The editor decodes the terminal's bytes as UTF-8 on the calling thread's own locale
//   (uselocale), so the rest of the process keeps its locale.
// - KeyDecoder, CompleteCommand, ContinuesOnNextLine and the history file's format
//   (ParseChatHistory, FormatChatHistory) are the pure rules beneath, tested on their own.
// Thread safety: a LineEditor is used by one thread; the stop may be requested from any.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "harness/core/result.h"
#include "input.h"

namespace harness::cli {

struct LineEditorCallbacks;

// What a terminal sends around a paste once bracketed paste is on, and what turns it off.
inline constexpr std::string_view kPasteStart = "\x1b[200~";
inline constexpr std::string_view kPasteEnd = "\x1b[201~";
inline constexpr std::string_view kBracketedPasteOn = "\x1b[?2004h";
inline constexpr std::string_view kBracketedPasteOff = "\x1b[?2004l";

// A terminal's bytes as characters. Outside a paste every byte sequence comes out as it came
// (an escape sequence is the editor's to bind); ill-formed UTF-8 comes out as U+FFFD, one per
// bad byte. Inside a paste (between kPasteStart and kPasteEnd, both consumed) a newline, CR or
// CR LF comes out as one '\n' and the other control characters are dropped, so pasted text is
// only ever text, never an editing key.
class KeyDecoder {
 public:
  struct Key {
    char32_t code_point = 0;
    bool pasted = false;
  };

  void Feed(std::string_view bytes) { pending_.append(bytes); }
  // The next key; nullopt when the bytes held so far may be the start of a longer sequence
  // (a paste marker, a character cut between reads) or there are none. With `flush` a held
  // partial sequence comes out as it is instead: the caller waited and nothing more came.
  std::optional<Key> Next(bool flush = false);
  bool holding() const { return at_ < pending_.size(); }

 private:
  std::string pending_;
  std::size_t at_ = 0;
  bool pasting_ = false;
  bool after_cr_ = false;  // a pasted CR came last: an LF right after it is the same newline
};

// Tab on `typed` (the line up to the cursor): when it is a slash command's beginning, `insert`
// is what to add (the one command's rest and a space, or what every candidate shares), and
// `candidates` the commands it may still become when there is nothing to add and several
// remain.
struct CommandCompletion {
  std::string insert;
  std::vector<std::string> candidates;
};
CommandCompletion CompleteCommand(std::string_view typed, std::span<const std::string> commands);

// A line that ends in a backslash continues: the backslash is removed and true returned.
bool ContinuesOnNextLine(std::string& line);

// The history file: one message a line, each a JSON string (so a message of several lines is
// one line of the file). Lines that are not one are skipped and counted; the newest
// `max_entries` are kept.
struct ChatHistory {
  std::vector<std::string> messages;
  std::size_t unreadable_lines = 0;
};
ChatHistory ParseChatHistory(std::string_view text, std::size_t max_entries);
std::string FormatChatHistory(std::span<const std::string> messages);

class LineEditor {
 public:
  struct Options {
    int in_fd = 0;  // a terminal
    std::FILE* in = nullptr;
    std::FILE* out = nullptr;
    std::optional<std::filesystem::path> history_file;  // none: the history lasts the chat
    std::vector<std::string> commands;                  // what Tab completes
    std::size_t max_bytes = 0;
    std::stop_token stop;
    // Called with true when the first key of a message is read (before the editor echoes it)
    // and with false when Next returns: what else writes to the terminal keeps off the line
    // being typed meanwhile. May be empty.
    std::function<void(bool typing)> on_typing;
  };

  // The editor, or why the terminal cannot be edited (the caller reads raw lines instead).
  // `warning` is set when the history file could not be read (the chat goes on without it).
  static Result<std::unique_ptr<LineEditor>, std::string> Open(Options options,
                                                               std::string& warning);
  ~LineEditor();
  LineEditor(const LineEditor&) = delete;
  LineEditor& operator=(const LineEditor&) = delete;

  LineReader::Read Next(std::string& message);
  // Why the history file could not be written last time; empty when it was (or there is none).
  const std::string& history_problem() const { return history_problem_; }

  struct Parts;  // libedit's state, the locale, the wake-up

 private:
  friend struct LineEditorCallbacks;
  explicit LineEditor(Options options);
  int ReadChar(wchar_t* out);
  unsigned char Complete();
  const wchar_t* Prompt() const;
  void Remember(const std::string& message);

  Options options_;
  std::unique_ptr<Parts> parts_;
  KeyDecoder keys_;
  bool flush_ = false;            // the held bytes waited long enough
  bool last_key_pasted_ = false;  // the key being handled came from a paste
  bool line_ended_in_paste_ = false;
  bool continuing_ = false;  // the prompt of a continued line
  bool typing_ = false;      // a key of the message being read has come (Options::on_typing)
  std::vector<std::string> history_;
  std::string history_problem_;
};

}  // namespace harness::cli

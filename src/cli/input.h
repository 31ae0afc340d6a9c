// Reading a command's input: a named file, or standard input for "-"; and writing its output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "harness/core/result.h"

namespace harness::cli {

struct InputError {
  std::string message;  // names the file, never its contents
};

// What ReadInput takes at a path.
enum class InputFile : std::uint8_t {
  // Whatever the user named: a regular file, a pipe (`<(…)`), a terminal, a device.
  kAny,
  // A regular file only (standard input, "-", is taken as it is). Anything else (a directory, a
  // FIFO, a device, a socket) is refused by its type, named in the message, before a byte is
  // read; the file is opened without blocking, so a FIFO nobody writes to cannot hang the
  // command.
  kRegularOnly,
};

// Reads all of `path` ("-" is standard input). Inputs longer than max_bytes are refused
// without reading past the limit, so a huge or endless stream cannot exhaust memory; a regular
// file over the limit is refused by its size before any of it is read, and the message names
// both the size and the limit.
Result<std::string, InputError> ReadInput(std::string_view path, std::size_t max_bytes,
                                          InputFile accept = InputFile::kAny);

// The lines of a file descriptor (`harness chat`'s standard input), each without its newline
// and a trailing carriage return; a last line without a newline is a line too. A line over
// max_bytes is consumed to its end and reported (kTooLong), never held. Next() waits for input
// or for `stop`: a stop request wakes it at once (kStopped), also when nobody types at the
// terminal, and is seen before any line still buffered. A read error ends the input (kEnd).
// Not thread safe: one reader; the stop may be requested from any thread.
class LineReader {
 public:
  enum class Read : std::uint8_t { kLine, kTooLong, kEnd, kStopped };

  LineReader(int fd, std::size_t max_bytes, std::stop_token stop);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  Read Next(std::string& line);

 private:
  // Waits for the descriptor or the stop and reads one chunk; false when stopped.
  bool Fill();

  struct Wake {
    int fd;
    void operator()() const noexcept;
  };

  int fd_;
  std::size_t max_bytes_;
  std::stop_token stop_;
  int wake_ = -1;  // eventfd written by the stop callback
  std::optional<std::stop_callback<Wake>> on_stop_;
  std::string chunk_;
  std::size_t at_ = 0;  // the next unread byte of chunk_
  std::string line_;    // the line being read
  bool too_long_ = false;
  bool end_ = false;
};

// Writes `text` to `path` ("-" is standard output) through `path` + `temporary_suffix`, renamed
// over `path` once written whole, so that a failed write leaves no partial file behind. false:
// `problem` says what failed (the path and the system's reason).
bool WriteOutput(const std::string& path, std::string_view text, std::string_view temporary_suffix,
                 std::string& problem);

}  // namespace harness::cli

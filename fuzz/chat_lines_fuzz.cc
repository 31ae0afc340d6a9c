// libFuzzer target for the chat's line reader (src/cli/input.h LineReader).
//
// The first byte of an input sets the line limit (1 to 64 bytes), the rest is the stream.
// Invariants: nothing crashes; the reader returns exactly what a reference splitter finds (a
// segment up to each newline, and the last one without a newline when it is not empty): a
// segment over the limit is kTooLong, never part of a line; any other is a line without its
// newline and, before a newline, without one trailing carriage return; then kEnd, and kEnd
// again. A stop requested before reading is kStopped, before any line.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "input.h"

namespace {

using harness::cli::LineReader;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "chat_lines_fuzz: %s\n", what);
    std::abort();
  }
}

struct Expected {
  LineReader::Read read;
  std::string line;
};

std::vector<Expected> Reference(std::string_view stream, std::size_t limit) {
  std::vector<Expected> out;
  while (!stream.empty()) {
    const std::size_t nl = stream.find('\n');
    const bool whole = nl != std::string_view::npos;
    std::string_view segment = stream.substr(0, whole ? nl : stream.size());
    stream.remove_prefix(whole ? nl + 1 : stream.size());
    if (segment.size() > limit) {
      out.push_back({LineReader::Read::kTooLong, ""});
      continue;
    }
    if (whole && !segment.empty() && segment.back() == '\r')
      segment.remove_suffix(1);
    if (whole || !segment.empty())
      out.push_back({LineReader::Read::kLine, std::string(segment)});
  }
  return out;
}

// A descriptor that reads `stream` (a memory file, so any size fits).
int StreamFd(std::string_view stream) {
  const int fd = memfd_create("chat_lines_fuzz", MFD_CLOEXEC);
  Check(fd >= 0, "memfd_create");
  Check(write(fd, stream.data(), stream.size()) == static_cast<ssize_t>(stream.size()), "write");
  Check(lseek(fd, 0, SEEK_SET) == 0, "lseek");
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  const std::size_t limit = 1 + data[0] % 64;
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

  const int fd = StreamFd(stream);
  {
    std::stop_source stop;
    LineReader reader(fd, limit, stop.get_token());
    std::string line;
    for (const Expected& expected : Reference(stream, limit)) {
      Check(reader.Next(line) == expected.read, "the kind of a line differs from the reference");
      Check(line == expected.line, "a line differs from the reference");
    }
    Check(reader.Next(line) == LineReader::Read::kEnd, "no end after the last line");
    Check(reader.Next(line) == LineReader::Read::kEnd, "the end is not sticky");
    stop.request_stop();
    Check(reader.Next(line) == LineReader::Read::kStopped, "a stop is not seen");
  }
  Check(lseek(fd, 0, SEEK_SET) == 0, "lseek");
  {
    std::stop_source stop;
    stop.request_stop();
    LineReader reader(fd, limit, stop.get_token());
    std::string line;
    Check(reader.Next(line) == LineReader::Read::kStopped, "a stop before reading is not seen");
  }
  close(fd);
  return 0;
}

#include "input.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace harness::cli {
namespace {

// "67108864 bytes (64 MiB)": the limit as the user set or reads it in the docs.
std::string LimitText(std::size_t max_bytes) {
  constexpr std::size_t kMiB = 1024 * 1024;
  if (max_bytes % kMiB == 0)
    return fmt::format("{} bytes ({} MiB)", max_bytes, max_bytes / kMiB);
  return fmt::format("{} bytes", max_bytes);
}

}  // namespace

Result<std::string, InputError> ReadInput(std::string_view path, std::size_t max_bytes) {
  const bool from_stdin = path == "-";
  const std::string name = from_stdin ? "standard input" : std::string(path);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(
      from_stdin ? stdin : std::fopen(std::string(path).c_str(), "rb"),
      from_stdin ? +[](std::FILE*) { return 0; } : &std::fclose);
  if (!file) {
    return Fail(InputError{fmt::format("cannot open {}: {}", name, std::strerror(errno))});
  }
  std::string data;
  // A regular file (standard input redirected from one included) says its size: one over the
  // limit is refused before a byte of it is read, and one within it is read into a buffer of
  // its size (growing a string doubles it, and a 63 MB transcript would briefly hold 96 MiB).
  struct stat status {};
  if (::fstat(::fileno(file.get()), &status) == 0 && S_ISREG(status.st_mode)) {
    const auto size = static_cast<std::uintmax_t>(status.st_size);
    if (size > max_bytes) {
      return Fail(InputError{fmt::format("{} is {} bytes, larger than the limit of {}", name, size,
                                         LimitText(max_bytes))});
    }
    data.reserve(static_cast<std::size_t>(size));
  }
  // Anything else (a pipe, a terminal) is read up to the limit and refused there.
  char buffer[1 << 16];
  while (true) {
    const std::size_t n = std::fread(buffer, 1, sizeof buffer, file.get());
    if (n > 0) {
      if (data.size() + n > max_bytes) {
        return Fail(InputError{
            fmt::format("{} is larger than the limit of {}", name, LimitText(max_bytes))});
      }
      data.append(buffer, n);
    }
    if (n < sizeof buffer) {
      if (std::ferror(file.get())) {
        return Fail(InputError{fmt::format("cannot read {}: {}", name, std::strerror(errno))});
      }
      break;
    }
  }
  return data;
}

}  // namespace harness::cli

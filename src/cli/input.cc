#include "input.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace harness::cli {

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
  char buffer[1 << 16];
  while (true) {
    const std::size_t n = std::fread(buffer, 1, sizeof buffer, file.get());
    if (n > 0) {
      if (data.size() + n > max_bytes) {
        return Fail(InputError{fmt::format("{} is larger than {} bytes", name, max_bytes)});
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

#include "input.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <utility>

namespace harness::cli {
namespace {

// "67108864 bytes (64 MiB)": the limit as the user set or reads it in the docs.
std::string LimitText(std::size_t max_bytes) {
  constexpr std::size_t kMiB = 1024 * 1024;
  if (max_bytes % kMiB == 0)
    return fmt::format("{} bytes ({} MiB)", max_bytes, max_bytes / kMiB);
  return fmt::format("{} bytes", max_bytes);
}

// What a file of this mode is, for a message: "a directory", "a FIFO".
std::string_view FileKindText(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

using InputStream = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

// `path` opened for reading. For kRegularOnly, opened without blocking (a FIFO without a writer
// would block the open itself) and checked by its type before anything is read.
Result<InputStream, InputError> OpenInput(const std::string& path, const std::string& name,
                                          InputFile accept) {
  if (accept == InputFile::kAny) {
    InputStream file(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!file)
      return Fail(InputError{fmt::format("cannot open {}: {}", name, std::strerror(errno))});
    return file;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0)
    return Fail(InputError{fmt::format("cannot open {}: {}", name, std::strerror(errno))});
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    const int saved = errno;
    ::close(fd);
    return Fail(InputError{fmt::format("cannot read {}: {}", name, std::strerror(saved))});
  }
  if (!S_ISREG(status.st_mode)) {
    ::close(fd);
    return Fail(InputError{
        fmt::format("{} is {}, not a regular file", name, FileKindText(status.st_mode))});
  }
  InputStream file(::fdopen(fd, "rb"), &std::fclose);
  if (!file) {
    const int saved = errno;
    ::close(fd);
    return Fail(InputError{fmt::format("cannot open {}: {}", name, std::strerror(saved))});
  }
  return file;
}

}  // namespace

Result<std::string, InputError> ReadInput(std::string_view path, std::size_t max_bytes,
                                          InputFile accept) {
  const bool from_stdin = path == "-";
  const std::string name = from_stdin ? "standard input" : std::string(path);
  InputStream file(
      stdin, +[](std::FILE*) { return 0; });
  if (!from_stdin) {
    auto opened = OpenInput(std::string(path), name, accept);
    if (!opened.ok())
      return Fail(std::move(opened).error());
    file = std::move(opened).value();
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

LineReader::LineReader(int fd, std::size_t max_bytes, std::stop_token stop)
    : fd_(fd), max_bytes_(max_bytes), stop_(std::move(stop)), wake_(::eventfd(0, EFD_CLOEXEC)) {
  // Without an eventfd a stop is still seen, but only once input arrives.
  if (wake_ >= 0)
    on_stop_.emplace(stop_, Wake{wake_});
}

LineReader::~LineReader() {
  on_stop_.reset();  // waits for a callback still writing to wake_
  if (wake_ >= 0)
    ::close(wake_);
}

void LineReader::Wake::operator()() const noexcept {
  const std::uint64_t one = 1;
  while (::write(fd, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

bool LineReader::Fill() {
  for (;;) {
    if (stop_.stop_requested())
      return false;
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_, POLLIN, 0}};
    if (::poll(fds, wake_ >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR)
        continue;
      end_ = true;
      return true;
    }
    if (fds[0].revents == 0)
      continue;  // woken by the stop: the loop sees it
    chunk_.resize(1 << 16);
    const ssize_t n = ::read(fd_, chunk_.data(), chunk_.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    chunk_.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    at_ = 0;
    end_ = n <= 0;
    return true;
  }
}

LineReader::Read LineReader::Next(std::string& line) {
  line.clear();
  for (;;) {
    if (stop_.stop_requested())
      return Read::kStopped;
    while (at_ < chunk_.size()) {
      const char c = chunk_[at_++];
      if (c == '\n') {
        line.swap(line_);
        line_.clear();
        const bool too_long = std::exchange(too_long_, false);
        if (too_long) {
          line.clear();
          return Read::kTooLong;
        }
        if (!line.empty() && line.back() == '\r')
          line.pop_back();
        return Read::kLine;
      }
      if (too_long_)
        continue;
      if (line_.size() < max_bytes_) {
        line_.push_back(c);
      } else {
        too_long_ = true;
        line_.clear();
      }
    }
    if (end_) {
      if (std::exchange(too_long_, false))
        return Read::kTooLong;
      line.swap(line_);
      line_.clear();
      return line.empty() ? Read::kEnd : Read::kLine;
    }
    if (!Fill())
      return Read::kStopped;
  }
}

bool WriteOutput(const std::string& path, std::string_view text, std::string_view temporary_suffix,
                 std::string& problem) {
  if (path == "-") {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() ||
        std::fflush(stdout) != 0) {
      problem = std::string("cannot write standard output: ") + std::strerror(errno);
      return false;
    }
    return true;
  }
  const std::string temporary = path + std::string(temporary_suffix);
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (file == nullptr) {
    problem = "cannot create " + temporary + ": " + std::strerror(errno);
    return false;
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  const int saved = errno;
  if (std::fclose(file) != 0 || !written) {
    problem = "cannot write " + temporary + ": " + std::strerror(written ? errno : saved);
    std::remove(temporary.c_str());
    return false;
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    problem = "cannot rename " + temporary + " to " + path + ": " + error.message();
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

}  // namespace harness::cli

// The threads of a process, for tests that prove a component starts or ends threads.
#pragma once

#include <dirent.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <thread>

namespace harness {

// The threads of a process now (Linux: one entry per thread in /proc/<pid>/task), this one by
// default. A thread that has returned may still be listed for a moment while it ends.
inline std::size_t ThreadCount(const std::string& process = "self") {
  std::size_t count = 0;
  if (DIR* dir = opendir(("/proc/" + process + "/task").c_str())) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.')
        ++count;
    }
    closedir(dir);
  }
  return count;
}

// Waits until the process has at most `count` threads (threads that end on their own, such as a
// pool's retiring workers); false if it still has more after `limit`. The count is what a test
// waits for: the polling only bounds how long a failing test takes.
inline bool ThreadCountFallsTo(std::size_t count, const std::string& process = "self",
                               std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (ThreadCount(process) > count) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace harness

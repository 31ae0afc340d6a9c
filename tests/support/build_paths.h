// Where a test or benchmark program finds the harness binary and the source tree, at run time.
//
// Neither path is compiled in. An absolute path in an object file makes every checkout compile
// that file anew instead of taking it from the compiler cache, and CI builds a fresh clone in a
// directory of its own (docs/ci.md). The layout is CMake's, fixed by the project: programs are
// built one directory below the build directory (`<build>/tests/`, `<build>/bench/`), the CLI is
// `<build>/harness`, and `<build>/CMakeCache.txt` names the source tree.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace harness::build_paths {

// The build directory: the parent of the directory that holds this program.
inline std::filesystem::path BuildDir() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : self.parent_path().parent_path();
}

// The harness binary: $HARNESS_BINARY when set, else `<build>/harness`.
inline const char* HarnessBinary() {
  static const std::string binary = [] {
    const char* set = std::getenv("HARNESS_BINARY");
    return set != nullptr && *set != '\0' ? std::string(set) : (BuildDir() / "harness").string();
  }();
  return binary.c_str();
}

// The source tree: $HARNESS_SOURCE_DIR when set (ctest sets it for the unit tests), else the
// CMAKE_HOME_DIRECTORY the build directory was configured from; empty if neither is known.
inline const char* SourceDir() {
  static const std::string source = [] {
    const char* set = std::getenv("HARNESS_SOURCE_DIR");
    if (set != nullptr && *set != '\0')
      return std::string(set);
    std::ifstream cache(BuildDir() / "CMakeCache.txt");
    const std::string key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
    for (std::string line; std::getline(cache, line);)
      if (line.rfind(key, 0) == 0)
        return line.substr(key.size());
    return std::string();
  }();
  return source.c_str();
}

}  // namespace harness::build_paths

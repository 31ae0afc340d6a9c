// Reading a command's input: a named file, or standard input for "-".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "harness/core/result.h"

namespace harness::cli {

struct InputError {
  std::string message;  // names the file, never its contents
};

// Reads all of `path` ("-" is standard input). Inputs longer than max_bytes are refused
// without reading past the limit, so a huge or endless stream cannot exhaust memory; a regular
// file over the limit is refused by its size before any of it is read, and the message names
// both the size and the limit.
Result<std::string, InputError> ReadInput(std::string_view path, std::size_t max_bytes);

}  // namespace harness::cli

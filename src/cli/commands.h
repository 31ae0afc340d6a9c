// The subcommands of the harness CLI; each returns the process exit code and writes its verdict
// to standard output, problems with the invocation to standard error.
#pragma once

#include <string>

namespace harness::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalid = 1;
inline constexpr int kExitUsage = 2;

int ValidateSummaryCommand(const std::string& path);
int ValidateTranscriptCommand(const std::string& path);

}  // namespace harness::cli

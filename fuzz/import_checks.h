// What every importer's fuzz target checks (import_*_fuzz.cc): ImportTranscript never crashes
// and, run twice, gives the same result (importing is deterministic). On success the transcript
// encodes and decodes back to itself (so the CLI's output is always a valid transcript), every
// tool message answers a call of an earlier assistant message of its step, and no two open
// calls of a step share an id. On failure the kind is one of the enum's, the error has a
// JSONPath and a short rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <unordered_set>

#include "harness/content/codec.h"
#include "harness/import/import.h"

namespace harness::fuzz {

[[noreturn]] inline void ImportViolation(const char* what) {
  std::fprintf(stderr, "import fuzz: %s\n", what);
  std::abort();
}

inline void CheckPairing(const Transcript& transcript) {
  std::unordered_set<std::string> open;
  for (const Message& message : transcript) {
    if (const auto* tool = message.as<ToolResultMessage>()) {
      if (open.erase(tool->tool_use_id) != 1)
        ImportViolation("a tool message answers no open call of its step");
      continue;
    }
    if (!open.empty())
      ImportViolation("a step ends with a call unanswered");
    open.clear();
    // Calls are the tool_use blocks directly in an assistant message; anywhere else (a user
    // message of the source may hold one) such a block is content, as in every transcript
    // (compaction/tail.h, step 1).
    if (message.role() != Role::kAssistant)
      continue;
    for (const Block& block : message.blocks()) {
      if (const auto* call = block.as<ToolUseBlock>()) {
        if (call->id.empty() || !open.insert(call->id).second)
          ImportViolation("a call without an id, or two open calls with one id");
      }
    }
  }
}

inline int CheckImport(ImportFormat format, const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  ImportLimits limits;
  limits.max_bytes = 1u << 20;
  const auto imported = ImportTranscript(format, input, limits);
  const auto again = ImportTranscript(format, input, limits);
  if (imported.ok() != again.ok())
    ImportViolation("two imports of the same input disagree");
  if (!imported.ok()) {
    const ImportError& e = imported.error();
    switch (e.kind) {
      case ImportErrorKind::kJson:
      case ImportErrorKind::kRecord:
      case ImportErrorKind::kEmpty:
      case ImportErrorKind::kLimit:
        break;
      default:
        ImportViolation("unknown error kind");
    }
    if (e.path.empty() || e.path[0] != '$' || e.rule.empty() || e.rule.size() > 300)
      ImportViolation("error without a path or a short rule");
    if (e.Describe() != again.error().Describe())
      ImportViolation("two imports of the same input fail differently");
    return 0;
  }
  if (!(imported->transcript == again->transcript) ||
      imported->report.dropped != again->report.dropped)
    ImportViolation("two imports of the same input differ");
  if (imported->report.dropped.size() > kMaxDroppedKinds + 2)
    ImportViolation("the report is not bounded");
  const auto encoded = EncodeTranscript(imported->transcript);
  if (!encoded.ok())
    ImportViolation("an imported transcript does not encode");
  const auto decoded = DecodeTranscript(*encoded);
  if (!decoded.ok() || !(*decoded == imported->transcript))
    ImportViolation("an imported transcript does not decode to itself");
  CheckPairing(imported->transcript);
  return 0;
}

}  // namespace harness::fuzz

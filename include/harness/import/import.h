// Importing other agents' session files as harness transcripts (docs/import.md).
//
// Contract of ImportTranscript:
// - It reads one session file of a known format: Claude Code's session JSONL (or its records as
//   one JSON array, or pretty-printed one after another), Codex's rollout JSONL, an OpenHands
//   trajectory (a JSON array of events), a SWE-agent trajectory (.traj, one JSON object), a
//   Gemini CLI saved chat or session recording, or a Cline / Roo Code
//   api_conversation_history.json, and returns the conversation as harness messages in the order
//   the source records them, with a report of what it left out. docs/import.md says, format by
//   format, what becomes which message and what is dropped.
// - The result is a valid transcript (ValidateTranscript passes) whose tool calls pair up as the
//   compaction's tail selection requires: every tool message answers a call of an earlier
//   assistant message that no other tool message answered; no two outstanding calls share an
//   id; a call the source never answered and after which the conversation went on gets an
//   error result saying so (kNoResultRecordedText); calls still open at the very end (a session
//   taken in the middle of a turn) stay open. A tool result that answers no call is dropped and
//   counted. Calls without an id get one derived from their position ("import-call-N").
// - Importing is deterministic: the same bytes give the same transcript and report.
// - Bad input is an ImportError, never a crash: the file's line (JSONL formats; 1-based), the
//   JSONPath of the offending value within that line or the document ("$.message.content[2]"),
//   and a rule in words a user can act on that quotes at most a few bytes of the input.
//   Unknown record or block types are not errors: sources add new ones often, so they are
//   dropped and counted in the report. A file in which nothing is a message of the format is
//   kEmpty.
// - Limits: limits.max_bytes is checked before anything is parsed; a JSONL file is parsed one
//   line at a time (memory: the text, one line's DOM and the transcript being built); a JSON
//   array (OpenHands, Cline, a Gemini saved chat, Claude Code records) one element at a time; a
//   SWE-agent document, a Gemini session recording, and the messages of its JSONL form as a
//   whole (so their DOM, a few times the text, bounded by max_bytes). Nesting is bounded while
//   parsing; no code path recurses with the input's depth. More than limits.max_messages messages
//   is kLimit.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "harness/content/message.h"
#include "harness/core/result.h"

namespace harness {

enum class ImportFormat { kClaudeCode, kCodex, kOpenHands, kSweAgent, kGemini, kCline };

// Wire names: "claude-code", "codex", "openhands", "swe-agent", "gemini", "cline".
std::string_view ImportFormatName(ImportFormat format);
std::optional<ImportFormat> ImportFormatFromName(std::string_view name);

enum class ImportErrorKind {
  kJson,    // a line or the document is not strict JSON (syntax, UTF-8, duplicate members, depth)
  kRecord,  // a record lacks a member the format requires, or has one of the wrong type
  kEmpty,   // nothing in the file is a message of the format
  kLimit,   // the file, the message count or a tool input's nesting is over the limit
};

std::string_view ImportErrorKindName(ImportErrorKind kind);

struct ImportError {
  ImportErrorKind kind;
  std::size_t line = 0;  // 1-based line of a JSONL file; 0 for a JSON document or the whole file
  std::string path;      // JSONPath within the line or document; "$" for its root
  std::string rule;

  // "line <n>: <path>: <rule>", or "<path>: <rule>" without a line.
  std::string Describe() const;
};

struct ImportLimits {
  std::size_t max_bytes = 64u * 1024 * 1024;  // the CLI's transcript limit
  std::size_t max_messages = 1'000'000;
};

// What the import read and what it left out, for the user.
struct ImportReport {
  std::size_t records = 0;  // lines (JSONL) or events / history items read
  // What was dropped, by a short description ("line type \"progress\"", "sidechain message"),
  // with how many times. At most kMaxDroppedKinds descriptions; more are counted as "other".
  std::map<std::string, std::size_t> dropped;
  std::size_t results_added = 0;  // error results added for calls the source never answered
};

inline constexpr std::size_t kMaxDroppedKinds = 32;

// The text of the error result added for a call that the source never answered.
inline constexpr std::string_view kNoResultRecordedText =
    "harness import: the source recorded no result for this tool call";

struct ImportedTranscript {
  Transcript transcript;
  ImportReport report;
};

Result<ImportedTranscript, ImportError> ImportTranscript(ImportFormat format, std::string_view text,
                                                         const ImportLimits& limits = {});

}  // namespace harness

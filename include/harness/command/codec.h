// The durable command-intent codec, version 1 (docs/spec/contracts.md §6 under
// docs/spec/decisions.md D2: strict where the reference is lenient, validated on both sides,
// versioned).
//
// EncodeCommand(command), first failure wins:
//   1. ValidateCommand fails                  -> CommandValidationError
//   2. the encoding is longer than 16 MiB     -> CommandLimitError
// The encoding is one JSON object with no white space and this member order:
//   {"type":"<Command>","v":1,"command_id":"…","session_id":"…","loop_id":"…","agency":n,
//    "created_at":"<RFC 3339>"[,"message":<user message, content codec>[,"origin":n]]
//    [,"input_command_id":"…"][,"request_command_id":"…"]}
// loop_id is omitted when zero (a session-wide Shutdown); every other member is always written
// (message only for SubmitInput, with origin only when it is not direct; input_command_id only
// for CancelQueuedInput, request_command_id only for CancelDelegateRequest).
//
// DecodeCommand(bytes), first failure wins:
//   1. longer than 16 MiB                                        -> CommandLimitError
//   2. not strict JSON (syntax, bad UTF-8, duplicate member at any depth, too deep), or not an
//      object                                                    -> CommandDecodeError
//   3. "v": absent -> UnsupportedSchemaError{version: none}; not a non-negative integer ->
//      CommandDecodeError; any value but 1 (0 included)           -> UnsupportedSchemaError
//   4. "type": absent -> UnknownCommandTypeError{""}; not a string -> CommandDecodeError; not
//      exactly "Compact", "SubmitInput", "Interrupt", "Shutdown", "CancelQueuedInput" or
//      "CancelDelegateRequest"                                     -> UnknownCommandTypeError
//   5. members: command_id, session_id, loop_id (optional ids: absent is zero, present must be
//      canonical lowercase UUIDs), agency (required integer 0-255; its domain is judged in 6),
//      created_at (required), message (SubmitInput only, required, a user message), origin
//      (SubmitInput only, optional integer 0-255, never 1: absent is direct), input_command_id
//      (CancelQueuedInput only) and request_command_id (CancelDelegateRequest only), optional ids
//      whose absence step 6 refuses, and nothing else            -> CommandDecodeError{type}
//   6. ValidateCommand                                            -> CommandValidationError
// Every failure is one of the five error types; an accepted command re-encodes, and that
// encoding decodes to an equal command.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

#include "harness/command/command.h"
#include "harness/content/transcript.h"
#include "harness/core/json.h"
#include "harness/core/result.h"
#include "harness/event/wire.h"

namespace harness {

struct UnknownCommandTypeError {
  std::string type;  // at most 128 bytes of the name found ("" when absent)
  std::string Message() const;
};

struct CommandDecodeError {
  std::string type;  // the command type, "" when the failure came before dispatch
  std::variant<JsonError, TranscriptError> cause;
  std::string Message() const;
};

struct CommandLimitError {
  std::size_t size = 0;
  std::size_t limit = kMaxRecordBytes;
  std::string Message() const;
};

using CommandError = std::variant<UnknownCommandTypeError, UnsupportedSchemaError,
                                  CommandDecodeError, CommandLimitError, CommandValidationError>;

// "unknown_type", "unsupported_version", "decode", "too_large", "invalid".
std::string_view CommandErrorKindName(const CommandError& error);
std::string DescribeCommandError(const CommandError& error);

Result<std::string, CommandError> EncodeCommand(const Command& command);
Result<Command, CommandError> DecodeCommand(std::string_view bytes);

}  // namespace harness

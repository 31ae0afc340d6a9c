#include "harness/command/codec.h"

#include <optional>
#include <type_traits>
#include <utility>

#include "content/internal/codec_value.h"
#include "core/internal/json_dom.h"
#include "event/internal/wire_read.h"
#include "harness/content/codec.h"

namespace harness {
namespace {

constexpr JsonLimits kCommandJsonLimits{.max_bytes = kMaxRecordBytes,
                                        .max_depth = kTranscriptJsonDepth + 1};

using DecodeCause = std::variant<JsonError, TranscriptError>;

template <class C>
Result<Command, CommandError> DecodeTyped(JsonObject& top) {
  const auto decode_error = [](DecodeCause cause) {
    return Fail(CommandError(CommandDecodeError{std::string(C::kType), std::move(cause)}));
  };
  C command{};
  CommandHeader& h = command.header;
  const auto read_header = [&]() -> Status<JsonError> {
    HARNESS_TRY(h.command_id, OptionalUuidMember(top, "command_id"));
    HARNESS_TRY(h.session_id, OptionalUuidMember(top, "session_id"));
    HARNESS_TRY(h.loop_id, OptionalUuidMember(top, "loop_id"));
    HARNESS_TRY(std::uint64_t agency, top.RequireUint("agency", UINT8_MAX));
    h.agency = static_cast<Agency>(agency);
    HARNESS_TRY(h.created_at, RequireTimeMember(top, "created_at"));
    return {};
  };
  if (auto header = read_header(); !header.ok())
    return decode_error(std::move(header).error());
  if constexpr (std::is_same_v<C, SubmitInput>) {
    auto member = top.Require("message");
    if (!member.ok())
      return decode_error(std::move(member).error());
    auto message = DecodeMessageValue(**member, top.MemberPath("message"));
    if (!message.ok())
      return decode_error(std::move(message).error());
    auto* user = std::get_if<UserMessage>(&message->value);
    if (user == nullptr) {
      return decode_error(
          JsonError{JsonErrorKind::kRange, "$.message.role", 0, "expected a user message"});
    }
    command.message = std::move(*user);
    // Absent is the one encoding of a direct input (every intent written before origins).
    if (top.Find("origin") != nullptr) {
      auto origin = top.RequireUint("origin", UINT8_MAX);
      if (!origin.ok())
        return decode_error(std::move(origin).error());
      command.origin = static_cast<InputOrigin>(*origin);
      if (command.origin == InputOrigin::kDirect) {
        return decode_error(JsonError{JsonErrorKind::kRange, top.MemberPath("origin"), 0,
                                      "a direct input's origin (1) is written by omitting it"});
      }
    }
  }
  if constexpr (std::is_same_v<C, CancelQueuedInput> || std::is_same_v<C, CancelDelegateRequest>) {
    constexpr std::string_view name =
        std::is_same_v<C, CancelQueuedInput> ? "input_command_id" : "request_command_id";
    auto id = OptionalUuidMember(top, name);
    if (!id.ok())
      return decode_error(std::move(id).error());
    if constexpr (std::is_same_v<C, CancelQueuedInput>)
      command.input_command_id = *id;
    else
      command.request_command_id = *id;
  }
  if constexpr (std::is_same_v<C, Compact>) {
    // Absent is the one encoding of "no instructions" (an intent written before they existed).
    if (top.Find("instructions") != nullptr) {
      auto instructions = top.RequireString("instructions");
      if (!instructions.ok())
        return decode_error(std::move(instructions).error());
      if (instructions->empty()) {
        return decode_error(JsonError{JsonErrorKind::kRange, top.MemberPath("instructions"), 0,
                                      "empty instructions are written by omitting them"});
      }
      command.instructions = std::move(*instructions);
    }
    // Absent is the one encoding of "no preview asked" (docs/preview.md).
    if (top.Find("preview") != nullptr) {
      auto preview = top.RequireBool("preview");
      if (!preview.ok())
        return decode_error(std::move(preview).error());
      if (!*preview) {
        return decode_error(JsonError{JsonErrorKind::kRange, top.MemberPath("preview"), 0,
                                      "no preview is written by omitting it"});
      }
      command.preview = true;
    }
  }
  if (auto unknown = top.RejectUnknown(); !unknown.ok())
    return decode_error(std::move(unknown).error());
  Command out(std::move(command));
  if (auto valid = ValidateCommand(out); !valid.ok())
    return Fail(CommandError(std::move(valid).error()));
  return out;
}

Result<Command, CommandError> Dispatch(std::string_view type, JsonObject& top) {
  if (type == Compact::kType)
    return DecodeTyped<Compact>(top);
  if (type == SubmitInput::kType)
    return DecodeTyped<SubmitInput>(top);
  if (type == Interrupt::kType)
    return DecodeTyped<Interrupt>(top);
  if (type == Shutdown::kType)
    return DecodeTyped<Shutdown>(top);
  if (type == CancelQueuedInput::kType)
    return DecodeTyped<CancelQueuedInput>(top);
  if (type == CancelDelegateRequest::kType)
    return DecodeTyped<CancelDelegateRequest>(top);
  return Fail(CommandError(
      UnknownCommandTypeError{std::string(type.substr(0, kMaxRecordTypeNameInError))}));
}

}  // namespace

std::string UnknownCommandTypeError::Message() const {
  return DescribeUnknownRecordType("command", type);
}

std::string CommandDecodeError::Message() const {
  return DescribeRecordDecodeError("command", type,
                                   std::visit([](const auto& c) { return c.Describe(); }, cause));
}

std::string CommandLimitError::Message() const {
  return DescribeRecordLimit("command", size, limit);
}

std::string_view CommandErrorKindName(const CommandError& error) {
  return RecordErrorKindName(error.index()).value_or("invalid");
}

std::string DescribeCommandError(const CommandError& error) {
  return std::visit([](const auto& e) { return e.Message(); }, error);
}

Result<std::string, CommandError> EncodeCommand(const Command& command) {
  if (auto valid = ValidateCommand(command); !valid.ok())
    return Fail(CommandError(std::move(valid).error()));
  const CommandHeader& h = HeaderOf(command);
  std::string out;
  WireWriter w(out);
  w.String("type", CommandTypeName(command))
      .Uint("v", kRecordSchemaVersion)
      .IdIfSet("command_id", h.command_id)
      .IdIfSet("session_id", h.session_id)
      .IdIfSet("loop_id", h.loop_id)
      .Uint("agency", static_cast<std::uint8_t>(h.agency))
      .Time("created_at", h.created_at);
  if (const auto* input = std::get_if<SubmitInput>(&command)) {
    w.Key("message");
    if (!AppendMessage(out, input->message).ok()) {
      return Fail(CommandError(
          CommandValidationError{SubmitInput::kType, "Message", FieldRule::kIsInvalid}));
    }
    if (input->origin != InputOrigin::kDirect)
      w.Uint("origin", static_cast<std::uint8_t>(input->origin));
  }
  if (const auto* cancel = std::get_if<CancelQueuedInput>(&command))
    w.IdIfSet("input_command_id", cancel->input_command_id);
  if (const auto* cancel = std::get_if<CancelDelegateRequest>(&command))
    w.IdIfSet("request_command_id", cancel->request_command_id);
  if (const auto* compact = std::get_if<Compact>(&command)) {
    if (!compact->instructions.empty())
      w.String("instructions", compact->instructions);
    if (compact->preview)
      w.Bool("preview", true);
  }
  w.Close();
  if (out.size() > kMaxRecordBytes)
    return Fail(CommandError(CommandLimitError{out.size(), kMaxRecordBytes}));
  return out;
}

Result<Command, CommandError> DecodeCommand(std::string_view bytes) {
  return DecodeRecord<CommandError, CommandLimitError, CommandDecodeError, UnknownCommandTypeError>(
      bytes, kCommandJsonLimits, "command",
      [](std::uint64_t v) { return v == kRecordSchemaVersion; },
      [](std::string_view type, JsonObject& top, std::uint64_t) { return Dispatch(type, top); });
}

}  // namespace harness

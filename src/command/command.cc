#include "harness/command/command.h"

#include "harness/content/transcript.h"
#include "harness/core/utf8.h"

namespace harness {
namespace {

template <class C>
Failure<CommandValidationError> Broken(std::string_view field, FieldRule rule) {
  return Fail(CommandValidationError{C::kType, field, rule});
}

template <class C>
Status<CommandValidationError> ValidateHeader(const CommandHeader& h, bool loop_required) {
  if (h.command_id.IsZero())
    return Broken<C>("CommandID", FieldRule::kMustBeSet);
  if (h.session_id.IsZero())
    return Broken<C>("SessionID", FieldRule::kMustBeSet);
  if (loop_required && h.loop_id.IsZero())
    return Broken<C>("LoopID", FieldRule::kMustBeSet);
  if (h.agency != Agency::kMachine && h.agency != Agency::kUser)
    return Broken<C>("Agency", FieldRule::kIsInvalid);
  if (h.created_at.time_since_epoch().count() == 0)
    return Broken<C>("CreatedAt", FieldRule::kMustBeSet);
  return {};
}

Status<CommandValidationError> ValidateOne(const Compact& c) {
  HARNESS_CHECK(ValidateHeader<Compact>(c.header, true));
  if (CompactInstructionsProblem(c.instructions))
    return Broken<Compact>("Instructions", FieldRule::kIsInvalid);
  return {};
}

Status<CommandValidationError> ValidateOne(const SubmitInput& c) {
  HARNESS_CHECK(ValidateHeader<SubmitInput>(c.header, true));
  if (!ValidateMessage(c.message).ok())
    return Broken<SubmitInput>("Message", FieldRule::kIsInvalid);
  if (InputOriginName(c.origin).empty())
    return Broken<SubmitInput>("Origin", FieldRule::kIsInvalid);
  return {};
}

Status<CommandValidationError> ValidateOne(const CancelQueuedInput& c) {
  HARNESS_CHECK(ValidateHeader<CancelQueuedInput>(c.header, true));
  if (c.input_command_id.IsZero())
    return Broken<CancelQueuedInput>("InputCommandID", FieldRule::kMustBeSet);
  return {};
}

Status<CommandValidationError> ValidateOne(const CancelDelegateRequest& c) {
  HARNESS_CHECK(ValidateHeader<CancelDelegateRequest>(c.header, true));
  if (c.request_command_id.IsZero())
    return Broken<CancelDelegateRequest>("RequestCommandID", FieldRule::kMustBeSet);
  return {};
}

Status<CommandValidationError> ValidateOne(const Interrupt& c) {
  return ValidateHeader<Interrupt>(c.header, true);
}

Status<CommandValidationError> ValidateOne(const Shutdown& c) {
  return ValidateHeader<Shutdown>(c.header, false);
}

}  // namespace

std::optional<std::string> CompactInstructionsProblem(std::string_view instructions) {
  if (instructions.empty())
    return std::nullopt;
  if (instructions.size() > kMaxCompactInstructionsBytes) {
    return "instructions are at most " + std::to_string(kMaxCompactInstructionsBytes) +
           " bytes (these are " + std::to_string(instructions.size()) + ")";
  }
  if (!IsWellFormedUtf8(instructions))
    return std::string("instructions must be UTF-8");
  for (char c : instructions) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7f)
      return std::string("instructions may not hold control characters other than tab and newline");
  }
  if (IsBlankText(instructions))
    return std::string("instructions may not be blank");
  return std::nullopt;
}

std::string CommandValidationError::Message() const {
  std::string out = "command: invalid ";
  out.append(command);
  out += ": ";
  out.append(field);
  out.push_back(' ');
  out.append(FieldRuleText(rule));
  return out;
}

Status<CommandValidationError> ValidateCommand(const Command& command) {
  return std::visit([](const auto& c) { return ValidateOne(c); }, command);
}

std::string_view CommandTypeName(const Command& command) {
  return std::visit([](const auto& c) { return std::decay_t<decltype(c)>::kType; }, command);
}

const CommandHeader& HeaderOf(const Command& command) {
  return std::visit([](const auto& c) -> const CommandHeader& { return c.header; }, command);
}

CommandHeader& HeaderOf(Command& command) {
  return std::visit([](auto& c) -> CommandHeader& { return c.header; }, command);
}

}  // namespace harness

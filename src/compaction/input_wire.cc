#include <fmt/format.h>

#include <numeric>
#include <vector>

#include "compaction/wire_head.h"
#include "content/internal/codec_value.h"
#include "core/internal/json_dom.h"
#include "harness/compaction/wire.h"
#include "harness/content/codec.h"

namespace harness {
namespace {

// The transcript sits one level below the top object; everything the content codec can write
// parses, so that depth errors inside the transcript are the codec's to report.
constexpr JsonLimits kInputJsonLimits{.max_bytes = 16u * 1024 * 1024,
                                      .max_depth = kTranscriptJsonDepth + 1};

CompactionInputError TranscriptEncodingError(TranscriptError error) {
  return CompactionInputError{CompactionInputField::kTranscript, {}, std::move(error)};
}

// Everything before the transcript's messages.
std::string InputHead(const CompactionInput& input) {
  std::string out;
  AppendWireHead(out, input.basis, input.model, input.request_fingerprint);
  out += R"("transcript":[)";
  return out;
}

// Everything after the transcript's messages.
std::string InputTail(const CompactionInput& input) {
  return fmt::format(R"(],"max_summary_tokens":{}}})", input.max_summary_tokens);
}

// The input wire as head, one encoding per message, tail: its bytes are the concatenation with
// commas between the messages, so replacing one message changes the size by the difference of
// the two message encodings alone.
struct EncodedInput {
  std::string head;
  std::vector<std::string> messages;
  std::string tail;

  std::size_t Size() const {
    std::size_t size = head.size() + tail.size() + (messages.empty() ? 0 : messages.size() - 1);
    for (const auto& m : messages)
      size += m.size();
    return size;
  }
  std::string Join() const {
    std::string out;
    out.reserve(Size());
    out += head;
    for (std::size_t i = 0; i < messages.size(); ++i) {
      if (i > 0)
        out.push_back(',');
      out += messages[i];
    }
    out += tail;
    return out;
  }
};

Result<EncodedInput, CompactionInputError> EncodeParts(const CompactionInput& input) {
  HARNESS_CHECK(input.Validate());
  EncodedInput parts{InputHead(input), {}, InputTail(input)};
  parts.messages.reserve(input.transcript.size());
  for (const Message& message : input.transcript) {
    auto encoded = EncodeMessage(message);
    if (!encoded.ok())
      return Fail(TranscriptEncodingError(std::move(encoded).error()));
    parts.messages.push_back(std::move(encoded).value());
  }
  return parts;
}

}  // namespace

std::string CompactionInputTooLargeError::Message() const {
  return "compaction input exceeds serialized byte limit";
}

Result<std::string, CompactionInputError> EncodeCompactionInput(const CompactionInput& input) {
  HARNESS_CHECK(input.Validate());
  std::string out = InputHead(input);
  for (std::size_t i = 0; i < input.transcript.size(); ++i) {
    if (i > 0)
      out.push_back(',');
    if (auto appended = AppendMessage(out, input.transcript[i]); !appended.ok()) {
      return Fail(TranscriptEncodingError(std::move(appended).error()));
    }
  }
  out += InputTail(input);
  return out;
}

Result<std::string, CompactionInputFitError> EncodeCompactionInputWithin(
    const CompactionInput& input, std::int64_t limit) {
  HARNESS_TRY(EncodedInput parts, EncodeParts(input));
  std::size_t size = parts.Size();
  if (limit <= 0)
    return Fail(CompactionInputTooLargeError{limit, size});
  const auto fits = [limit](std::size_t n) { return n <= static_cast<std::uint64_t>(limit); };
  if (fits(size))
    return parts.Join();
  for (std::size_t i = 0; i < input.transcript.size(); ++i) {
    const auto* tool = input.transcript[i].as<ToolResultMessage>();
    if (tool == nullptr || tool->blocks.empty())
      continue;
    const Message stub = ToolResultMessage{
        {TextBlock{std::string(kOldToolResultStub)}}, tool->tool_use_id, tool->is_error};
    auto encoded = EncodeMessage(stub);
    if (!encoded.ok()) {
      return Fail(CompactionInputFitError(TranscriptEncodingError(std::move(encoded).error())));
    }
    if (encoded->size() >= parts.messages[i].size())
      continue;  // the stub would not shrink it
    size = size - parts.messages[i].size() + encoded->size();
    parts.messages[i] = std::move(encoded).value();
    if (fits(size))
      return parts.Join();
  }
  return Fail(CompactionInputTooLargeError{limit, size});
}

std::string CompactionInputWireError::Message() const {
  return "invalid compaction input wire: " + json.Describe();
}

Result<CompactionInput, CompactionInputDecodeError> DecodeCompactionInput(std::string_view bytes) {
  using Error = CompactionInputDecodeError;
  const auto wire = [](JsonError error) { return Fail(Error(CompactionInputWireError{error})); };
  const auto field = [](CompactionInputField f, std::optional<TranscriptError> cause = {}) {
    return Fail(Error(CompactionInputError{f, {}, std::move(cause)}));
  };

  // Steps 1-3: the shape of the wire.
  auto parsed = ParseStrictJson(bytes, kInputJsonLimits);
  if (!parsed.ok())
    return wire(parsed.error());
  auto top = JsonObject::Open(*parsed, "$");
  if (!top.ok())
    return wire(top.error());
  auto head = ReadWireHead(*top);
  if (!head.ok())
    return wire(std::move(head).error().json);
  auto transcript_value = top->Require("transcript");
  if (!transcript_value.ok())
    return wire(transcript_value.error());
  auto budget = top->RequireUint("max_summary_tokens");
  if (!budget.ok())
    return wire(budget.error());
  if (auto unknown = top->RejectUnknown(); !unknown.ok())
    return wire(unknown.error());

  auto identity = ReadWireIdentity(*head);
  if (!identity.ok())
    return wire(identity.error());

  // Steps 4-6: the values, each reported as the input field it belongs to.
  auto parsed_fingerprint = Fingerprint::ParseHex(head->request_fingerprint);
  if (!parsed_fingerprint.ok())
    return field(CompactionInputField::kRequestFingerprint);

  CompactionInput input;
  const Json& transcript = **transcript_value;
  // An empty array is a well-formed transcript; that it is empty is Validate's verdict, which
  // comes after the identity checks (so revision 0 with [] is reported as basis).
  if (!(transcript.is_array() && transcript.empty())) {
    auto messages = DecodeTranscriptValue(transcript, "$.transcript");
    if (!messages.ok()) {
      return field(CompactionInputField::kTranscript, std::move(messages).error());
    }
    input.transcript = std::move(messages).value();
  }

  auto event = Uuid::ParseCanonical(identity->through_event_id);
  if (!event.ok())
    return field(CompactionInputField::kBasis);

  input.basis = ContextBasis{identity->revision, *event};
  input.model = std::move(identity->model);
  input.request_fingerprint = *parsed_fingerprint;
  input.max_summary_tokens = *budget;

  // Step 7.
  if (auto valid = input.Validate(); !valid.ok())
    return Fail(Error(std::move(valid).error()));
  return input;
}

}  // namespace harness

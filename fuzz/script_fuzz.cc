// libFuzzer target for the script of the scripted model client.
//
// Invariants checked (abort on violation):
// - ParseScript returns steps or a ScriptError whose path starts at "$" and whose detail is
//   non-empty and bounded (it quotes at most a few bytes of the script);
// - every parsed step is one the contract allows: at least one step, a message for a message
//   step, a nameable error kind other than canceled, delay_ms <= 600000, no stop on an error;
// - replaying the script (delays skipped) against a compaction request answers each step as
//   scripted: a summary becomes an envelope that decodes to the input's identity and the
//   step's XML, raw text comes back verbatim, a usage is always reported (never 0 unless
//   scripted), and the call after the last step fails with "script exhausted";
// - a step that streams (gaps skipped) gives the sink its text blocks' text, whole and in
//   order, in pieces of at most its byte count or one whole UTF-8 character; a step that does
//   not stream gives the sink nothing.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "harness/compaction/wire.h"
#include "harness/scripted/model_client.h"
#include "support/compaction_inputs.h"

namespace {

using namespace harness;

constexpr std::size_t kStepsReplayed = 64;

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "script_fuzz: %s\n", what);
  std::abort();
}

void Require(bool condition, const char* what) {
  if (!condition)
    Violation(what);
}

InferenceRequest FixedRequest(const CompactionInput& input) {
  InferenceRequest request;
  request.model = input.model;
  request.messages.emplace_back(UserMessage{{TextBlock{EncodeCompactionInput(input).value()}}});
  return request;
}

void CheckStep(const ScriptStep& step) {
  Require(step.delay_ms <= 600000, "delay above the maximum");
  if (step.stream) {
    Require(step.stream->bytes >= 1 && step.stream->bytes <= (1u << 20), "stream bytes bound");
    Require(step.stream->gap_ms <= 600000, "stream gap above the maximum");
  }
  switch (step.kind) {
    case ScriptStep::Kind::kSummary:
    case ScriptStep::Kind::kRaw:
      break;
    case ScriptStep::Kind::kMessage:
      Require(step.message.has_value(), "message step without a message");
      break;
    case ScriptStep::Kind::kError:
      Require(!step.stream, "stream on an error step");
      Require(!InferenceErrorKindName(step.error).empty(), "unnamed error kind");
      Require(step.error != InferenceErrorKind::kCanceled, "scripted cancel");
      Require(!step.max_tokens, "stop on an error step");
      break;
    default:
      Violation("unknown step kind");
  }
}

void CheckAnswer(const ScriptStep& step, const Result<InferenceResponse, InferenceError>& answer,
                 const CompactionInput& input) {
  if (step.kind == ScriptStep::Kind::kError) {
    Require(!answer.ok() && answer.error().kind == step.error, "error step answered otherwise");
    return;
  }
  Require(answer.ok(), "answering step failed");
  const AssistantMessage& message = answer->message;
  Require(message.usage.has_value(), "no usage");
  if (step.output_tokens) {
    Require(message.usage->output_tokens == *step.output_tokens, "scripted usage not reported");
  } else if (step.kind != ScriptStep::Kind::kMessage || !step.message->usage) {
    Require(message.usage->output_tokens >= 1, "default usage of zero");
  }
  Require((answer->stop == StopReason::kMaxTokens) == step.max_tokens, "stop reason");
  if (step.kind == ScriptStep::Kind::kMessage) {
    Require(message.blocks == step.message->blocks, "message blocks changed");
    return;
  }
  Require(message.blocks.size() == 1 && message.blocks[0].is<TextBlock>(), "not one text block");
  const std::string& text = message.blocks[0].as<TextBlock>()->text;
  if (step.kind == ScriptStep::Kind::kRaw) {
    Require(text == step.text, "raw text changed");
    return;
  }
  const auto envelope = DecodeSummaryEnvelope(text);
  Require(envelope.ok(), "summary envelope does not decode");
  Require(envelope->basis == input.basis && envelope->model == input.model &&
              envelope->request_fingerprint == input.request_fingerprint,
          "summary envelope identity");
  Require(envelope->summary == step.text, "summary xml changed");
}

// The length of the UTF-8 character that starts with `lead` (1 for anything else).
std::size_t CharacterLength(unsigned char lead) {
  if (lead >= 0xF0)
    return 4;
  if (lead >= 0xE0)
    return 3;
  return lead >= 0xC0 ? 2 : 1;
}

void CheckPieces(const ScriptStep& step, const Result<InferenceResponse, InferenceError>& answer,
                 const std::vector<std::string>& pieces) {
  if (!step.stream || !answer.ok()) {
    Require(pieces.empty(), "text given to the sink of a step that does not stream");
    return;
  }
  std::string text;
  for (const Block& block : answer->message.blocks) {
    if (const auto* t = block.as<TextBlock>())
      text.append(t->text);
  }
  std::string joined;
  for (const std::string& piece : pieces) {
    Require(!piece.empty(), "empty piece");
    Require(piece.size() <= step.stream->bytes ||
                piece.size() == CharacterLength(static_cast<unsigned char>(piece[0])),
            "piece longer than its bytes");
    Require((static_cast<unsigned char>(piece[0]) & 0xC0) != 0x80, "piece cut inside a character");
    joined.append(piece);
  }
  Require(joined == text, "streamed text differs from the answer");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const CompactionInput input = testing::StandardInput();
  static const InferenceRequest request = FixedRequest(input);
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  auto script = ParseScript(bytes);
  if (!script.ok()) {
    const ScriptError& error = script.error();
    Require(error.path.rfind('$', 0) == 0, "error path does not start at $");
    Require(!error.detail.empty(), "error without detail");
    Require(error.detail.size() <= 256, "error detail unbounded");
    return 0;
  }
  std::vector<ScriptStep> steps = std::move(script).value();
  Require(!steps.empty(), "empty script accepted");
  if (steps.size() > kStepsReplayed)
    steps.resize(kStepsReplayed);
  for (ScriptStep& step : steps) {
    CheckStep(step);
    step.delay_ms = 0;
    if (step.stream)
      step.stream->gap_ms = 0;
  }
  std::vector<std::string> pieces;
  ScriptedModelClient client(steps, [&](std::string_view piece) { pieces.emplace_back(piece); });
  for (const ScriptStep& step : steps) {
    pieces.clear();
    const auto answer = client.Complete(request, {});
    CheckAnswer(step, answer, input);
    CheckPieces(step, answer, pieces);
  }
  const auto after = client.Complete(request, {});
  Require(!after.ok() && after.error().detail == "script exhausted", "script not exhausted");
  Require(client.calls() == steps.size() + 1, "calls miscounted");
  return 0;
}

#include "harness/scripted/model_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <utility>

#include "content/internal/codec_value.h"
#include "core/internal/json_dom.h"
#include "harness/compaction/wire.h"
#include "harness/content/codec.h"

namespace harness {
namespace {

constexpr std::uint64_t kMaxDelayMs = 600'000;
constexpr std::uint64_t kMaxStreamPiece = 1u << 20;
constexpr std::array<std::string_view, 4> kStepKinds{"summary", "raw", "message", "error"};

ScriptError FromJsonError(const JsonError& error) {
  std::string detail(JsonErrorKindName(error.kind));
  if (error.kind == JsonErrorKind::kSyntax || error.kind == JsonErrorKind::kTooLarge ||
      error.kind == JsonErrorKind::kTooDeep) {
    detail.append(fmt::format(" (byte {})", error.offset));
  }
  if (!error.detail.empty()) {
    detail.append(": ");
    detail.append(error.detail);
  }
  return ScriptError{error.path, std::move(detail)};
}

// Lifts a JsonError result into a ScriptError one.
template <class T>
Result<T, ScriptError> Lift(Result<T, JsonError> result) {
  if (!result.ok())
    return Fail(FromJsonError(result.error()));
  return std::move(result).value();
}

Status<ScriptError> LiftStatus(const Status<JsonError>& status) {
  if (!status.ok())
    return Fail(FromJsonError(status.error()));
  return {};
}

Result<std::optional<TokenCount>, ScriptError> ParseUsage(const Json* usage, std::string path) {
  if (usage == nullptr)
    return std::optional<TokenCount>();
  HARNESS_TRY(JsonObject object, Lift(JsonObject::Open(*usage, std::move(path))));
  HARNESS_TRY(const std::uint64_t tokens, Lift(object.RequireUint("output_tokens")));
  HARNESS_CHECK(LiftStatus(object.RejectUnknown()));
  return std::optional<TokenCount>(tokens);
}

Result<ScriptStream, ScriptError> ParseStream(const Json& value, std::string path) {
  HARNESS_TRY(JsonObject object, Lift(JsonObject::Open(value, std::move(path))));
  ScriptStream stream;
  const Json* bytes = object.Find("bytes");
  const Json* gap = object.Find("gap_ms");
  HARNESS_CHECK(LiftStatus(object.RejectUnknown()));
  if (bytes == nullptr)
    return Fail(ScriptError{object.path(), "a stream needs \"bytes\", the largest piece"});
  const std::string bytes_path = object.MemberPath("bytes");
  HARNESS_TRY(const std::uint64_t piece, Lift(JsonAsUint(*bytes, bytes_path, kMaxStreamPiece)));
  if (piece == 0)
    return Fail(ScriptError{bytes_path, "a piece holds at least one byte"});
  stream.bytes = static_cast<std::size_t>(piece);
  if (gap != nullptr) {
    HARNESS_TRY(const std::uint64_t ms,
                Lift(JsonAsUint(*gap, object.MemberPath("gap_ms"), kMaxDelayMs)));
    stream.gap_ms = static_cast<std::uint32_t>(ms);
  }
  return stream;
}

Result<InferenceErrorKind, ScriptError> ParseErrorKind(const Json& value, std::string path) {
  HARNESS_TRY(const std::string name, Lift(JsonAsString(value, path)));
  const auto kind = InferenceErrorKindFromName(name);
  // A canceled call is the caller's doing (its stop token), never the model's answer.
  if (!kind || *kind == InferenceErrorKind::kCanceled) {
    return Fail(
        ScriptError{std::move(path), fmt::format("unknown error kind {}", QuoteForDetail(name))});
  }
  return *kind;
}

Result<AssistantMessage, ScriptError> ParseAssistant(const Json& value, std::string path) {
  auto message = DecodeMessageValue(value, path);
  if (!message.ok()) {
    const TranscriptError& error = message.error();
    return Fail(ScriptError{
        error.path, fmt::format("{}: {}", TranscriptErrorKindName(error.kind), error.rule)});
  }
  const auto* assistant = message->as<AssistantMessage>();
  if (assistant == nullptr) {
    path.append(".role");
    return Fail(ScriptError{std::move(path), "expected role \"assistant\""});
  }
  return *assistant;
}

Result<ScriptStep, ScriptError> ParseStep(const Json& value, std::string path) {
  HARNESS_TRY(JsonObject object, Lift(JsonObject::Open(value, std::move(path))));
  std::size_t kinds = 0;
  std::size_t kind_index = 0;
  const Json* kind_value = nullptr;
  for (std::size_t i = 0; i < kStepKinds.size(); ++i) {
    if (const Json* member = object.Find(kStepKinds[i])) {
      ++kinds;
      kind_index = i;
      kind_value = member;
    }
  }
  const Json* usage = object.Find("usage");
  const Json* delay = object.Find("delay_ms");
  const Json* stop = object.Find("stop");
  const Json* stream = object.Find("stream");
  HARNESS_CHECK(LiftStatus(object.RejectUnknown()));
  if (kinds != 1) {
    return Fail(ScriptError{object.path(), kinds == 0 ? "a step needs one of summary, raw, "
                                                        "message, error"
                                                      : "a step has more than one kind"});
  }

  ScriptStep step;
  step.kind = static_cast<ScriptStep::Kind>(kind_index);
  const std::string kind_path = object.MemberPath(kStepKinds[kind_index]);
  switch (step.kind) {
    case ScriptStep::Kind::kSummary:
    case ScriptStep::Kind::kRaw: {
      HARNESS_TRY(step.text, Lift(JsonAsString(*kind_value, kind_path)));
      break;
    }
    case ScriptStep::Kind::kMessage: {
      HARNESS_TRY(step.message, ParseAssistant(*kind_value, kind_path));
      break;
    }
    case ScriptStep::Kind::kError: {
      HARNESS_TRY(step.error, ParseErrorKind(*kind_value, kind_path));
      break;
    }
  }
  HARNESS_TRY(step.output_tokens, ParseUsage(usage, object.MemberPath("usage")));
  if (delay != nullptr) {
    HARNESS_TRY(const std::uint64_t ms,
                Lift(JsonAsUint(*delay, object.MemberPath("delay_ms"), kMaxDelayMs)));
    step.delay_ms = static_cast<std::uint32_t>(ms);
  }
  if (stop != nullptr) {
    const std::string stop_path = object.MemberPath("stop");
    HARNESS_TRY(const std::string reason, Lift(JsonAsString(*stop, stop_path)));
    if (reason != StopReasonName(StopReason::kMaxTokens)) {
      return Fail(ScriptError{stop_path, "the only stop a script sets is \"max_tokens\""});
    }
    if (step.kind == ScriptStep::Kind::kError) {
      return Fail(ScriptError{stop_path, "an error step has no stop reason"});
    }
    step.max_tokens = true;
  }
  if (stream != nullptr) {
    const std::string stream_path = object.MemberPath("stream");
    if (step.kind == ScriptStep::Kind::kError)
      return Fail(ScriptError{stream_path, "an error step has no text to stream"});
    HARNESS_TRY(step.stream, ParseStream(*stream, stream_path));
  }
  return step;
}

// The first text block of the last user message: where a compactor puts its input wire (a
// model compactor's anchors block follows it).
std::optional<std::string> LastUserText(const InferenceRequest& request) {
  for (auto it = request.messages.rbegin(); it != request.messages.rend(); ++it) {
    const auto* user = it->as<UserMessage>();
    if (user == nullptr)
      continue;
    for (const Block& block : user->blocks) {
      if (const auto* t = block.as<TextBlock>())
        return t->text;
    }
    return std::string();
  }
  return std::nullopt;
}

TokenCount DefaultOutputTokens(const AssistantMessage& message) {
  std::uint64_t bytes = 0;
  for (const Block& block : message.blocks) {
    if (const auto* text = block.as<TextBlock>())
      bytes += text->text.size();
  }
  return std::max<TokenCount>(1, (bytes + 3) / 4);
}

bool HasToolUse(const AssistantMessage& message) {
  for (const Block& block : message.blocks) {
    if (block.is<ToolUseBlock>())
      return true;
  }
  return false;
}

Result<AssistantMessage, InferenceError> Answer(const ScriptStep& step,
                                                const InferenceRequest& request) {
  switch (step.kind) {
    case ScriptStep::Kind::kSummary: {
      const auto text = LastUserText(request);
      if (!text)
        return Fail(InferenceError{InferenceErrorKind::kInvalidResponse, "no user message"});
      const auto input = DecodeCompactionInput(*text);
      if (!input.ok()) {
        return Fail(InferenceError{InferenceErrorKind::kInvalidResponse,
                                   "the last user message holds no compaction input"});
      }
      return AssistantMessage{
          {TextBlock{EncodeSummaryEnvelope(input->basis, input->model, input->request_fingerprint,
                                           step.text)}},
          std::nullopt};
    }
    case ScriptStep::Kind::kRaw:
      return AssistantMessage{{TextBlock{step.text}}, std::nullopt};
    case ScriptStep::Kind::kMessage:
      return *step.message;
    case ScriptStep::Kind::kError:
      break;
  }
  return Fail(InferenceError{step.error, "scripted"});
}

// Waits `ms` milliseconds unless `stop` is requested first.
void InterruptibleWait(std::uint32_t ms, std::stop_token stop) {
  std::mutex mutex;
  std::condition_variable_any wake;
  std::unique_lock lock(mutex);
  wake.wait_for(lock, stop, std::chrono::milliseconds(ms), [] { return false; });
}

// The length of the piece of `text` that starts at `at`: at most `bytes`, cut only between UTF-8
// characters, and never less than one whole character (a script's strings are well-formed UTF-8:
// the strict JSON reader refuses anything else).
std::size_t PieceLength(std::string_view text, std::size_t at, std::size_t bytes) {
  const auto continuation = [&](std::size_t i) {
    return i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
  };
  std::size_t end = std::min(text.size(), at + bytes);
  while (end > at + 1 && continuation(end))
    --end;
  if (end == at + 1) {
    while (continuation(end))
      ++end;
  }
  return end - at;
}

// Gives the answer's text to `on_text` as the step's stream says. false: `stop` was requested.
bool StreamText(const AssistantMessage& message, const ScriptStream& stream,
                const TextDeltaSink& on_text, std::stop_token stop) {
  bool first = true;
  for (const Block& block : message.blocks) {
    const auto* text = block.as<TextBlock>();
    if (text == nullptr)
      continue;
    for (std::size_t at = 0; at < text->text.size();) {
      if (!first && stream.gap_ms > 0)
        InterruptibleWait(stream.gap_ms, stop);
      if (stop.stop_requested())
        return false;
      first = false;
      const std::size_t length = PieceLength(text->text, at, stream.bytes);
      on_text(std::string_view(text->text).substr(at, length));
      at += length;
    }
  }
  return true;
}

}  // namespace

std::string ScriptError::Message() const {
  std::string out("invalid script at ");
  out.append(path);
  out.append(": ");
  out.append(detail);
  return out;
}

Result<std::vector<ScriptStep>, ScriptError> ParseScript(std::string_view json) {
  // A message step sits one level deeper than a message in a transcript file.
  HARNESS_TRY(const Json root,
              Lift(ParseStrictJson(json, JsonLimits{16u * 1024 * 1024, kTranscriptJsonDepth + 1})));
  if (!root.is_array())
    return Fail(ScriptError{"$", fmt::format("expected an array, found {}", JsonTypeName(root))});
  if (root.empty())
    return Fail(ScriptError{"$", "a script needs at least one step"});
  std::vector<ScriptStep> steps;
  steps.reserve(root.size());
  for (std::size_t i = 0; i < root.size(); ++i) {
    HARNESS_TRY(ScriptStep step, ParseStep(root[i], fmt::format("$[{}]", i)));
    steps.push_back(std::move(step));
  }
  return steps;
}

ScriptedModelClient::ScriptedModelClient(std::vector<ScriptStep> steps, TextDeltaSink on_text)
    : on_text_(std::move(on_text)), steps_(std::move(steps)) {}

Result<std::unique_ptr<ScriptedModelClient>, ScriptError> ScriptedModelClient::FromJson(
    std::string_view json, TextDeltaSink on_text) {
  HARNESS_TRY(std::vector<ScriptStep> steps, ParseScript(json));
  return std::make_unique<ScriptedModelClient>(std::move(steps), std::move(on_text));
}

Result<InferenceResponse, InferenceError> ScriptedModelClient::Complete(
    const InferenceRequest& request, std::stop_token stop) {
  std::optional<ScriptStep> step;
  {
    std::lock_guard lock(mutex_);
    requests_.push_back(request);
    if (next_ < steps_.size())
      step = steps_[next_];
    ++next_;
  }
  if (!step)
    return Fail(InferenceError{InferenceErrorKind::kTransport, "script exhausted"});
  if (step->delay_ms > 0)
    InterruptibleWait(step->delay_ms, stop);
  // The step is used up even when the call is canceled: steps follow calls, not answers.
  if (stop.stop_requested())
    return Fail(InferenceError{InferenceErrorKind::kCanceled, "stop requested"});

  HARNESS_TRY(AssistantMessage message, Answer(*step, request));
  if (step->stream && on_text_ && !StreamText(message, *step->stream, on_text_, stop))
    return Fail(InferenceError{InferenceErrorKind::kCanceled, "stop requested"});
  if (step->output_tokens) {
    Usage usage = message.usage.value_or(Usage{});
    usage.output_tokens = *step->output_tokens;
    message.usage = usage;
  } else if (!message.usage) {
    message.usage = Usage{0, DefaultOutputTokens(message), 0, 0, 0};
  }
  StopReason reason = HasToolUse(message) ? StopReason::kToolUse : StopReason::kEndTurn;
  if (step->max_tokens)
    reason = StopReason::kMaxTokens;
  return InferenceResponse{std::move(message), reason};
}

std::size_t ScriptedModelClient::calls() const {
  std::lock_guard lock(mutex_);
  return next_;
}

std::vector<InferenceRequest> ScriptedModelClient::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

}  // namespace harness

#include "serve/conversation_compact.h"

#include <algorithm>
#include <span>

#include "harness/compaction/model_compactor.h"
#include "harness/content/codec.h"
#include "harness/core/json.h"
#include "harness/event/wire.h"
#include "harness/runtime/compact.h"
#include "serve/sessions.h"
#include "serve/wire_members.h"

namespace harness::serve {

namespace {

ApiError Invalid(std::string detail) {
  return ApiError{ApiErrorKind::kInvalidArgument, std::move(detail)};
}

// The number of leading system messages whose blocks are all text, and their text joined: the
// system prompt a model request is made with. Any other system message stays in the history
// (CompactConversation then rejects the compaction `unavailable`).
std::size_t LeadingSystem(const Transcript& messages, std::string& prompt) {
  std::size_t count = 0;
  for (const Message& message : messages) {
    const auto* system = message.as<SystemMessage>();
    if (system == nullptr)
      break;
    std::string text;
    for (const Block& block : system->blocks) {
      const auto* part = block.as<TextBlock>();
      if (part == nullptr)
        return count;
      text.append(text.empty() ? "" : "\n").append(part->text);
    }
    prompt.append(prompt.empty() ? "" : "\n\n").append(text);
    ++count;
  }
  return count;
}

// The message indexes (of the history after the leading system messages) that pinning the
// elements `pins` names.
Result<std::vector<std::size_t>, ApiError> PinnedMessages(const ConversationCompactRequest& request,
                                                          std::size_t lifted) {
  std::vector<std::size_t> out;
  for (const std::size_t pin : request.pins) {
    std::size_t first = pin;
    std::size_t count = 1;
    if (request.dialect) {
      const auto& elements = request.conversation.elements;
      if (pin >= elements.size()) {
        return Fail(Invalid("options.pins: element " + std::to_string(pin) +
                            " is past the conversation's " + std::to_string(elements.size()) +
                            " elements"));
      }
      first = elements[pin].first_message;
      count = elements[pin].message_count;
      if (count == 0) {
        return Fail(Invalid("options.pins: element " + std::to_string(pin) +
                            " is opaque (kept only as sent), so it cannot be pinned"));
      }
    } else if (pin >= request.messages.size()) {
      return Fail(Invalid("options.pins: message " + std::to_string(pin) +
                          " is past the conversation's " + std::to_string(request.messages.size()) +
                          " messages"));
    }
    if (first < lifted) {
      return Fail(Invalid("options.pins: " + std::to_string(pin) +
                          " is the system prompt, which is kept anyway"));
    }
    for (std::size_t m = first; m < first + count; ++m) {
      if (std::find(out.begin(), out.end(), m - lifted) == out.end())
        out.push_back(m - lifted);
    }
  }
  return out;
}

Result<ServedModel, ApiError> MakeModel(const HeldConversationContext& context,
                                        const std::string& name, std::string_view role) {
  const auto found = context.models->find(name);
  if (found == context.models->end()) {
    return Fail(
        ApiError{ApiErrorKind::kUnknownModel, std::string(role) + " " + QuoteForDetail(name, 64) +
                                                  " is not one of the server's configured models"});
  }
  auto made = found->second.make();
  if (!made.ok()) {
    return Fail(ApiError{
        ApiErrorKind::kInternal,
        "the configured model " + QuoteForDetail(name, 64) + " cannot be made: " + made.error()});
  }
  return std::move(made).value();
}

// The request's options over the configured model's context.
Status<ApiError> ApplyOptions(const ConversationCompactRequest& request, ServedModel& model) {
  CompactionPolicy& policy = model.policy;
  if (request.context_window) {
    // An estimated count keeps the configured share of the window as its margin.
    if (model.limits.window_tokens > 0 && policy.safety_margin > 0) {
      policy.safety_margin = static_cast<TokenCount>(
          static_cast<double>(policy.safety_margin) * static_cast<double>(*request.context_window) /
          static_cast<double>(model.limits.window_tokens));
    }
    model.limits.window_tokens = *request.context_window;
  }
  if (request.max_output_tokens) {
    model.limits.max_output_tokens = *request.max_output_tokens;
    policy.reserved_output = *request.max_output_tokens;
  }
  if (request.keep_recent_segments)
    policy.keep_recent_segments = static_cast<std::int64_t>(*request.keep_recent_segments);
  if (request.keep_recent_tokens)
    policy.keep_recent_tokens = *request.keep_recent_tokens;
  if (request.max_summary_tokens)
    policy.max_summary_tokens = *request.max_summary_tokens;
  // A manual compaction of a conversation nobody continues here: no automatic compaction, no
  // masking, no approval step.
  policy.automatic = false;
  policy.masking = CompactionMasking::kOff;
  policy.approval = CompactionApproval::kAuto;
  return {};
}

ApiError FromFailure(const CompactFailure& failure) {
  switch (failure.kind) {
    case CompactFailureKind::kInvalidRequest:
      return Invalid(failure.message);
    case CompactFailureKind::kRefused:
      return failure.session ? FromSessionError(*failure.session)
                             : ApiError{ApiErrorKind::kInternal, failure.message};
    case CompactFailureKind::kRejected: {
      ApiError error{ApiErrorKind::kCompactionRejected, failure.message};
      if (failure.reason)
        error.reason = CompactRejectReasonName(*failure.reason);
      if (failure.detail)
        error.reason_detail = RejectDetailKindName(failure.detail->kind);
      return error;
    }
    case CompactFailureKind::kUnanswered:
      break;
  }
  return ApiError{ApiErrorKind::kInternal, failure.message};
}

// `array` (a JSON array) with `first` (JSON values) put before its elements.
std::string Prepend(std::span<const DialectElement> first, const std::string& array) {
  if (first.empty())
    return array;
  std::string out = "[";
  for (const DialectElement& element : first)
    out.append(out.size() > 1 ? "," : "").append(element.json);
  if (array.size() > 2)
    out.append(",").append(array, 1);
  else
    out.append("]");
  return out;
}

using Written = HeldCompaction;  // its compaction is filled in last

Result<Written, ApiError> WriteReplacement(const ConversationCompactRequest& request,
                                           const Transcript& input, std::size_t lifted,
                                           const CompactedConversation& compacted) {
  Written written;
  const std::size_t retained = compacted.report.retained;
  const std::size_t head_size = compacted.messages.size() - retained;
  if (!request.dialect) {
    Transcript out(input.begin(), input.begin() + static_cast<std::ptrdiff_t>(lifted));
    out.insert(out.end(), compacted.messages.begin(), compacted.messages.end());
    auto encoded = EncodeTranscript(out);
    if (!encoded.ok()) {
      return Fail(ApiError{ApiErrorKind::kInternal,
                           "the replacement cannot be encoded: " + encoded.error().Describe()});
    }
    written.messages = std::move(encoded).value();
    written.retained_elements = retained;
    return written;
  }
  const DialectConversation& conversation = request.conversation;
  const std::span<const DialectElement> elements(conversation.elements);
  const std::size_t system_end = ElementStartingAt(conversation, lifted).value_or(0);
  // A shortened tail is written as committed: the elements as sent would not fit. So is a
  // tail that is not the input's last messages: a cut inside the newest segment keeps that
  // segment's request and its newest steps, not the messages between them.
  const auto& kept = compacted.committed.retained;
  const bool suffix =
      kept.size() <= input.size() &&
      std::equal(kept.begin(), kept.end(), input.end() - static_cast<std::ptrdiff_t>(kept.size()));
  written.verbatim = compacted.report.shortened == 0 && suffix;
  Transcript head(
      compacted.messages.begin(),
      compacted.messages.begin() +
          static_cast<std::ptrdiff_t>(written.verbatim ? head_size : compacted.messages.size()));
  std::size_t from = elements.size();
  if (written.verbatim) {
    // The first element that starts at or before the cut: a cut inside an element keeps it
    // whole. A tool result there keeps the call it answers too (the runtime's cut never parts
    // them), so the start moves back to an element that starts with no tool result.
    std::size_t cut = input.size() - retained;
    const auto answers_a_call = [&](std::size_t message) {
      return message < input.size() && input[message].as<ToolResultMessage>() != nullptr;
    };
    while (cut > lifted && (!ElementStartingAt(conversation, cut) || answers_a_call(cut)))
      --cut;
    const std::optional<std::size_t> start = ElementStartingAt(conversation, cut);
    from = std::max(start.value_or(system_end), system_end);
  }
  const auto tail = elements.subspan(from);
  written.retained_elements = tail.size();
  auto array = [&]() -> Result<std::string, DialectError> {
    if (request.dialect == Dialect::kOpenAiChat)
      return WriteOpenAiChat("", head, tail);
    if (request.dialect == Dialect::kOpenAiResponses)
      return WriteOpenAiResponses("", head, tail);
    return WriteAnthropicMessages(head, tail);
  }();
  if (!array.ok()) {
    return Fail(Invalid("the replacement has no form in " +
                        std::string(CompactFormatName(request.dialect)) + ": " +
                        array.error().Describe()));
  }
  written.messages = Prepend(elements.first(system_end), *array);
  return written;
}

std::string Answer(const std::optional<Dialect>& dialect,
                   const std::optional<std::string>& system_json, const Written& written) {
  const CompactedConversation& compacted = written.compacted;
  std::string out;
  WireWriter w(out);
  w.String("format", CompactFormatName(dialect));
  RawMember(w, dialect == Dialect::kOpenAiResponses ? "input" : "messages", written.messages);
  if (system_json)
    RawMember(w, "system", *system_json);
  w.String("summary", compacted.summary).Key("report");
  const CompactionReport& report = compacted.report;
  WireWriter r(out);
  r.Uint("messages_before", report.messages_before);
  if (report.before)
    r.Uint("tokens_before", report.before->input_tokens);
  else
    RawMember(r, "tokens_before", "null");
  r.Uint("tokens_after", report.after.input_tokens)
      .Uint("input_limit", report.after.input_limit)
      .Uint("retained", report.retained)
      .Uint("retained_elements", written.retained_elements)
      .Bool("retained_verbatim", written.verbatim)
      .Uint("pinned", report.pinned)
      .Uint("shortened", report.shortened)
      .Uint("repaired", report.repaired);
  if (report.coverage) {
    r.Key("coverage");
    WireWriter(out)
        .Uint("found", report.coverage->found())
        .Uint("total", report.coverage->total())
        .Uint("missing", report.coverage->missing.size())
        .Close();
  }
  r.Close();
  if (compacted.stored)
    w.Id("session_id", compacted.stored->session).Id("loop_id", compacted.stored->loop);
  w.Close();
  return out;
}

}  // namespace

Result<std::string, ApiError> CompactHeldConversation(ConversationCompactRequest request,
                                                      const HeldConversationContext& context) {
  const std::optional<Dialect> dialect = request.dialect;
  const bool anthropic = dialect == Dialect::kAnthropicMessages;
  std::optional<std::string> system_json = request.conversation.system_json;
  HARNESS_TRY(HeldCompaction held, CompactHeldConversationParts(std::move(request), context));
  return Answer(dialect, anthropic ? system_json : std::nullopt, held);
}

Result<HeldCompaction, ApiError> CompactHeldConversationParts(
    ConversationCompactRequest request, const HeldConversationContext& context) {
  const Transcript& input = request.dialect ? request.conversation.transcript : request.messages;
  std::string system_prompt = request.conversation.system;
  const std::size_t lifted = LeadingSystem(input, system_prompt);
  HARNESS_TRY(std::vector<std::size_t> pins, PinnedMessages(request, lifted));
  HARNESS_TRY(ServedModel model, MakeModel(context, request.model, "the model"));
  HARNESS_CHECK(ApplyOptions(request, model));

  ::harness::CompactRequest compact;
  compact.messages.assign(input.begin() + static_cast<std::ptrdiff_t>(lifted), input.end());
  compact.system_prompt = std::move(system_prompt);
  compact.model = model.model;
  compact.limits = model.limits;
  compact.policy = model.policy;
  compact.counter = model.counter;
  if (request.coverage)
    compact.policy.coverage.mode = *request.coverage;
  else if (!request.compactor.offline)
    compact.policy.coverage.mode = CoverageMode::kRepair;  // as a served loop's (sessions.cc)
  if (!request.compactor.offline) {
    HARNESS_TRY(ServedModel compactor,
                MakeModel(context, request.compactor.model, "the compactor model"));
    if (!compactor.client) {
      return Fail(Invalid("the model " + QuoteForDetail(request.compactor.model, 64) +
                          " makes no model calls, so it cannot summarize; use the compactor "
                          "\"offline\""));
    }
    compact.compactor = std::make_shared<ModelCompactor>(compactor.client);
  }
  compact.compactor_name = CompactorName(request.compactor);
  compact.instructions = request.instructions;
  compact.pins = std::move(pins);
  compact.journal = request.store ? context.journal : nullptr;
  compact.env = context.env;
  compact.host = context.host;
  compact.stop = context.stop;
  auto compacted = CompactConversation(std::move(compact));
  if (!compacted.ok())
    return Fail(FromFailure(compacted.error()));
  HARNESS_TRY(Written written, WriteReplacement(request, input, lifted, *compacted));
  written.compacted = std::move(compacted).value();
  return written;
}

}  // namespace harness::serve

#include "serve/gateway_messages_plan.h"

#include <algorithm>
#include <utility>

#include "harness/event/compaction.h"
#include "harness/event/revert.h"
#include "harness/inference/counter.h"
#include "harness/inference/request.h"

namespace harness::serve {

namespace {

// The gateway's count and compaction context: the server's offline model (docs/spec/gateway.md
// §2.4.3), whatever model the request names upstream.
constexpr std::string_view kOfflineModel = "offline";

Result<ServedModel, GatewayError> ContextModel(const HeldConversationContext& context,
                                               const std::string& name) {
  auto internal = [](std::string why) {
    return GatewayError{500, "api_error", "internal", std::move(why)};
  };
  if (context.models == nullptr)
    return Fail(internal("the gateway has no models to count with"));
  const auto found = context.models->find(name);
  if (found == context.models->end())
    return Fail(internal("the gateway's model \"" + name + "\" is not configured"));
  auto model = found->second.make();
  if (!model.ok())
    return Fail(internal("the gateway's model \"" + name + "\" cannot be made: " + model.error()));
  return std::move(model).value();
}

TokenCount CountInput(const HeldConversationContext& context, const ServedModel& model,
                      const DialectConversation& conversation) {
  InferenceRequest request;
  request.model = model.model;
  request.system = conversation.system;
  request.messages = conversation.transcript;
  if (model.counter) {
    auto counted = model.counter->Count(request, context.stop);
    if (counted.ok())
      return counted->input_tokens;
  }
  // A counter that cannot count this request (or none): the conservative estimate.
  return EstimateRequestTokens(request);
}

// Whether the journal's last history replacement of `session` is an undo (docs/undo.md): the
// compaction a block carries no longer stands. A session the journal does not hold (not stored,
// or another server's journal), or one it cannot read, stands.
bool CompactionUndone(Journal& journal, const Uuid& session) {
  constexpr std::size_t kPage = 256;
  bool undone = false;
  std::uint64_t from = 1;
  while (true) {
    auto page = journal.Read(session, from, kPage);
    if (!page.ok())
      return false;
    for (const JournalRecord& record : *page) {
      if (record.type == CompactionCommitted::kType)
        undone = false;
      else if (record.type == HistoryReverted::kType)
        undone = true;
    }
    if (page->size() < kPage)
      return undone;
    from = page->back().seq + 1;
  }
}

GatewayError FromApi(const ApiError& error) {
  GatewayError out = FromApiError(GatewayWire::kMessages, error);
  out.message = (out.status >= 500 ? "the compaction failed: " : "the compaction was refused: ") +
                out.message;
  return out;
}

}  // namespace

Result<MessagesPlan, GatewayError> PlanMessagesCall(std::string_view body,
                                                    const HeldConversationContext& context,
                                                    bool journal) {
  MessagesPlan plan;
  UndoneCompaction undone;
  if (context.journal != nullptr) {
    undone = [journal = context.journal](const Uuid& session) {
      return CompactionUndone(*journal, session);
    };
  }
  HARNESS_TRY(plan.request, ReadMessagesGatewayRequest(body, DialectLimits{}, undone));
  if (!plan.request.edit) {
    plan.upstream_body = UpstreamMessagesBody(body, plan.request);
    return plan;
  }
  const CompactEdit& edit = *plan.request.edit;
  const std::string model(kOfflineModel);
  HARNESS_TRY(const ServedModel served, ContextModel(context, model));
  const TokenCount input = CountInput(context, served, plan.request.conversation);
  plan.input_tokens = input;
  if (!CompactionDue(input, edit)) {
    plan.upstream_body = UpstreamMessagesBody(body, plan.request);
    return plan;
  }

  ConversationCompactRequest compact;
  compact.dialect = Dialect::kAnthropicMessages;
  compact.conversation = plan.request.conversation;
  compact.model = model;
  compact.instructions = edit.instructions;
  // The retained tail stays well under the trigger, so the next request does not compact again.
  compact.keep_recent_tokens =
      std::max<TokenCount>(1, std::min(served.policy.keep_recent_tokens, edit.trigger / 4));
  compact.store = journal;
  auto parts = CompactHeldConversationParts(std::move(compact), context);
  if (!parts.ok()) {
    if (parts.error().kind != ApiErrorKind::kCompactionRejected)
      return Fail(FromApi(parts.error()));
    plan.compaction_failure = parts.error().detail;
    plan.upstream_body = UpstreamMessagesBody(body, plan.request);
    return plan;
  }
  std::optional<Uuid> session;
  if (parts->compacted.stored)
    session = parts->compacted.stored->session;
  HARNESS_TRY(const CompactionCarry carry, CarryOfReplacement(parts->messages, session));
  plan.block = CompactionBlockJson(parts->compacted.summary, carry);
  plan.paused = edit.pause_after_compaction;
  plan.upstream_body = UpstreamMessagesBody(body, plan.request, parts->messages);
  return plan;
}

}  // namespace harness::serve

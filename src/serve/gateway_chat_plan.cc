#include "serve/gateway_chat_plan.h"

#include <algorithm>
#include <span>
#include <utility>

#include "content/internal/raw_json.h"
#include "core/internal/json_dom.h"
#include "harness/inference/counter.h"
#include "serve/api.h"

namespace harness::serve {

namespace {

// A journal read after a stored compaction reads at most this many records at once.
constexpr std::size_t kRecordsPerRead = 256;

constexpr GatewayWire kWire = GatewayWire::kChatCompletions;

GatewayError Internal(std::string message) {
  return GatewayError{500, "server_error", "internal", std::move(message)};
}

std::string JoinArray(std::span<const std::string> first, std::span<const DialectElement> rest) {
  std::string out = "[";
  for (const std::string& element : first)
    out.append(out.size() > 1 ? "," : "").append(element);
  for (const DialectElement& element : rest)
    out.append(out.size() > 1 ? "," : "").append(element.json);
  out.push_back(']');
  return out;
}

// The compacted conversation from CompactHeldConversation's answer: its `messages` elements as
// written, and the stored session's id.
struct Compacted {
  std::vector<std::string> elements;
  std::optional<Uuid> session;
};

Result<Compacted, GatewayError> ReadCompacted(std::string_view answer) {
  auto read = ReadOpenAiChat(answer);
  auto parsed = ParseStrictJson(answer);
  if (!read.ok() || !parsed.ok() || !parsed->is_object())
    return Fail(Internal("the compacted conversation cannot be read back"));
  Compacted out;
  for (DialectElement& element : read->elements)
    out.elements.push_back(std::move(element.json));
  const auto session = parsed->find("session_id");
  if (session != parsed->end() && session->is_string()) {
    auto id = Uuid::Parse(session->get<std::string>());
    if (id.ok())
      out.session = *id;
  }
  return out;
}

}  // namespace

Result<ChatCompletionRequest, GatewayError> ReadChatCompletionRequest(std::string_view body,
                                                                      const DialectLimits& limits) {
  if (body.size() > limits.max_bytes) {
    return Fail(GatewayError{413, "invalid_request_error", "request_too_large",
                             "the request body is " + std::to_string(body.size()) +
                                 " bytes, over the gateway's limit of " +
                                 std::to_string(limits.max_bytes)});
  }
  auto parsed = ParseStrictJson(body, JsonLimits{limits.max_bytes, limits.max_depth});
  if (!parsed.ok()) {
    return Fail(
        InvalidRequest(kWire, "invalid_json",
                       "the request body is not strict JSON: " + parsed.error().Describe()));
  }
  if (!parsed->is_object()) {
    return Fail(InvalidRequest(
        kWire, "invalid_request",
        std::string("the request body must be a JSON object, not ") + JsonTypeName(*parsed)));
  }
  ChatCompletionRequest out;
  out.document = std::move(parsed).value();
  const auto stream = out.document.find("stream");
  if (stream != out.document.end() && !stream->is_null()) {
    if (!stream->is_boolean()) {
      return Fail(InvalidRequest(
          kWire, "invalid_type",
          std::string("$.stream: stream must be true or false, not ") + JsonTypeName(*stream)));
    }
    out.stream = stream->get<bool>();
  }
  auto conversation = ReadOpenAiChat(body, limits);
  if (!conversation.ok()) {
    const DialectError& error = conversation.error();
    return Fail(InvalidRequest(
        kWire,
        error.kind == DialectErrorKind::kUnsupported ? "unsupported_message" : "invalid_messages",
        error.Describe()));
  }
  out.conversation = std::move(conversation).value();
  return out;
}

std::string WithMessages(const Json& document, std::string_view messages_array) {
  std::string out = "{";
  for (const auto& [name, value] : document.items()) {
    out.append(out.size() > 1 ? "," : "");
    AppendJsonString(out, name);
    out.push_back(':');
    if (name == "messages") {
      out.append(messages_array);
      continue;
    }
    // A value ParseStrictJson built always serializes; should one not, it goes as null rather
    // than as a body that is not JSON.
    out.append(raw_json::CompactJsonFromDom(value).value_or("null"));
  }
  out.push_back('}');
  return out;
}

std::string_view ChatRouteName(ChatRoute route) {
  switch (route) {
    case ChatRoute::kAsSent:
      return "as_sent";
    case ChatRoute::kRewritten:
      return "rewritten";
    case ChatRoute::kCompacted:
      return "compacted";
    case ChatRoute::kUndone:
      return "undone";
  }
  return "";
}

Result<std::unique_ptr<ChatGateway>, std::string> ChatGateway::Create(
    ChatGatewayOptions options, HeldConversationContext context) {
  if (context.models == nullptr)
    return Fail(std::string("the chat gateway needs the server's models"));
  const auto found = context.models->find(options.model);
  if (found == context.models->end()) {
    return Fail("the gateway model " + options.model +
                " is not one of the server's configured models");
  }
  auto made = found->second.make();
  if (!made.ok())
    return Fail("the gateway model " + options.model + " cannot be made: " + made.error());
  if (options.compact_at && *options.compact_at < 4)
    return Fail(std::string("the gateway's compaction threshold must be at least 4 tokens"));
  return std::unique_ptr<ChatGateway>(
      new ChatGateway(std::move(options), context, std::move(made).value()));
}

std::shared_ptr<const ChatPrefixEntry> ChatGateway::Revise(
    std::shared_ptr<const ChatPrefixEntry> entry) {
  if (entry == nullptr || !entry->compacted || !entry->session || context_.journal == nullptr)
    return entry;
  auto last = context_.journal->LastSequence(*entry->session);
  if (!last.ok() || *last == entry->last_seq)
    return entry;
  // The stored session changed after the compaction (the inspector pinned, previewed or undid
  // something): an undo there means the person wants this conversation sent uncompacted.
  ChatPrefixEntry revised = *entry;
  revised.last_seq = *last;
  for (std::uint64_t from = entry->last_seq + 1; from <= *last;) {
    auto records = context_.journal->Read(*entry->session, from, kRecordsPerRead);
    if (!records.ok() || records->empty())
      break;
    for (const JournalRecord& record : *records) {
      if (record.type == "HistoryReverted") {
        revised.compacted = false;
        revised.replacement.clear();
      }
    }
    from = records->back().seq + 1;
  }
  auto shared = std::make_shared<const ChatPrefixEntry>(revised);
  book_.Remember(std::move(revised));
  return shared;
}

Result<TokenCount, GatewayError> ChatGateway::Count(const Transcript& history) {
  InferenceRequest request;
  request.model = model_.model;
  request.messages = history;
  if (model_.counter == nullptr)
    return EstimateRequestTokens(request);
  auto counted = model_.counter->Count(request, {});
  if (!counted.ok())
    return Fail(Internal("the history cannot be counted: " + counted.error().Message()));
  return counted->input_tokens;
}

Result<ChatUpstreamRequest, GatewayError> ChatGateway::Prepare(std::string_view body,
                                                               std::stop_token stop) {
  HARNESS_TRY(ChatCompletionRequest request, ReadChatCompletionRequest(body));
  const std::vector<DialectElement>& elements = request.conversation.elements;
  ChatUpstreamRequest out;
  out.stream = request.stream;
  out.elements_received = elements.size();
  out.elements_sent = elements.size();
  out.body = std::string(body);
  if (elements.empty())
    return out;
  const std::vector<Fingerprint> chain = ChatPrefixChain(request.conversation);
  const std::shared_ptr<const ChatPrefixEntry> held = Revise(book_.Find(chain));
  if (held != nullptr) {
    out.session = held->session;
    if (!held->compacted) {
      out.route = ChatRoute::kUndone;
      return out;
    }
  }
  // The history to send: the request's, or the held compacted prefix and what follows it.
  DialectConversation history;
  std::string array;
  if (held != nullptr) {
    const std::span<const DialectElement> rest =
        std::span(elements).subspan(held->original_elements);
    array = JoinArray(held->replacement, rest);
    auto reread = ReadOpenAiChat(array);
    if (!reread.ok())
      return Fail(Internal("the held compacted prefix cannot be read back"));
    history = std::move(reread).value();
    out.route = ChatRoute::kRewritten;
    out.elements_sent = history.elements.size();
    out.body = WithMessages(request.document, array);
  } else {
    history = std::move(request.conversation);
  }
  if (!options_.compact_at)
    return out;
  auto tokens = Count(history.transcript);
  if (!tokens.ok()) {
    out.compaction_failed = tokens.error().message;
    return out;
  }
  out.tokens = *tokens;
  if (*tokens < *options_.compact_at)
    return out;
  const std::span<const Fingerprint> whole = std::span(chain).last(1);
  if (refused_.Find(whole) != nullptr) {
    out.compaction_failed = "the compaction of this same request was refused before";
    return out;
  }

  ConversationCompactRequest compact;
  compact.dialect = Dialect::kOpenAiChat;
  compact.conversation = std::move(history);
  compact.model = options_.model;
  compact.keep_recent_tokens = std::max<TokenCount>(1, *options_.compact_at / 4);
  compact.max_summary_tokens = std::max<TokenCount>(1, *options_.compact_at / 4);
  compact.store = options_.store && context_.journal != nullptr;
  HeldConversationContext context = context_;
  context.stop = stop;
  auto answer = CompactHeldConversation(std::move(compact), context);
  if (!answer.ok()) {
    out.compaction_failed = answer.error().detail;
    ChatPrefixEntry refused;
    refused.original = chain.back();
    refused.original_elements = out.elements_received;
    refused.compacted = false;
    refused_.Remember(std::move(refused));
    return out;
  }
  HARNESS_TRY(Compacted compacted, ReadCompacted(*answer));
  ChatPrefixEntry entry;
  entry.original = chain.back();
  entry.original_elements = out.elements_received;
  entry.replacement = std::move(compacted.elements);
  entry.session = compacted.session;
  if (entry.session && context_.journal != nullptr) {
    auto last = context_.journal->LastSequence(*entry.session);
    if (last.ok())
      entry.last_seq = *last;
  }
  out.route = ChatRoute::kCompacted;
  out.session = entry.session;
  out.elements_sent = entry.replacement.size();
  out.body = WithMessages(request.document, JoinArray(entry.replacement, {}));
  std::optional<Fingerprint> supersedes;
  if (held != nullptr)
    supersedes = held->original;
  book_.Remember(std::move(entry), supersedes);
  return out;
}

}  // namespace harness::serve

// POST /v1/chat/completions as a compacting gateway (docs/spec/gateway.md "Chat Completions"):
// a client that knows nothing of compaction sends its whole history with every request; the
// gateway sends the upstream the same request with the history compacted once it has crossed
// a threshold, and with the same compacted prefix on the conversation's later requests.
//
// Contract:
// - ReadChatCompletionRequest reads a request body: a JSON object (strict JSON, core/json.h)
//   whose `messages` the OpenAI Chat dialect reads (dialect/dialect.h, docs/spec/dialects.md
//   §2), with `stream` a boolean when present. Its other members are not read; they go upstream
//   as sent. Bad input is a GatewayError of the Chat Completions wire (400
//   invalid_request_error; 413 over limits.max_bytes) whose message names the JSONPath and the
//   rule, never quoting the input beyond the few bytes a DialectError quotes.
// - WithMessages writes the body with its `messages` replaced: the other members in their
//   order, each value compacted from the DOM (raw_json::CompactJsonFromDom), the same JSON.
// - ChatGateway::Prepare decides what goes upstream, in this order:
//   1. the request's prefix chain (serve/gateway_chat_prefix.h) is looked up in the book: a held
//      conversation whose compaction was undone goes upstream as sent (kUndone); for a
//      compacted one, the elements it replaced are swapped for its compacted prefix (the
//      request's later elements follow as sent). A stored compaction whose session has changed
//      in the journal since is checked first: an undo there (HistoryReverted) makes the entry
//      an undone one.
//   2. the history to send is counted with the gateway model's counter; at or over
//      options.compact_at tokens it is compacted (CompactHeldConversation on the gateway model
//      with the offline compactor, kept recent and summary budgets of a quarter of the
//      threshold each, stored as a session when options.store) and the book remembers the
//      request's elements as the conversation's original prefix and the compacted elements as
//      its replacement (kCompacted). A compaction that is refused or rejected sends the history
//      uncompacted and says why in compaction_failed; the same request again (every element
//      the same) is not attempted again, a longer one is.
//   3. else the request goes as sent, byte for byte (kAsSent), or rewritten (kRewritten).
//   Without options.compact_at nothing is ever compacted: every request goes as sent.
// - Nothing about the request's headers is seen here: the credential never reaches this code.
// Thread safety: Prepare may be called from any thread; concurrent requests of one conversation
// may each compact it (the later one supersedes the earlier in the book).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "core/internal/json_dom.h"
#include "harness/core/result.h"
#include "harness/core/tokens.h"
#include "harness/core/uuid.h"
#include "harness/dialect/dialect.h"
#include "serve/conversation_compact.h"
#include "serve/gateway.h"
#include "serve/gateway_chat_prefix.h"

namespace harness::serve {

struct ChatGatewayOptions {
  std::optional<TokenCount> compact_at;  // nullopt: requests always go as sent
  std::string model = "offline";         // the configured model whose counter and context apply
  bool store = true;                     // each compaction is a session in the journal
  ChatConversationBookLimits book;
};

struct ChatCompletionRequest {
  Json document;
  DialectConversation conversation;
  bool stream = false;
};

Result<ChatCompletionRequest, GatewayError> ReadChatCompletionRequest(
    std::string_view body, const DialectLimits& limits = {});

std::string WithMessages(const Json& document, std::string_view messages_array);

enum class ChatRoute { kAsSent, kRewritten, kCompacted, kUndone };
// "as_sent", "rewritten", "compacted", "undone"
std::string_view ChatRouteName(ChatRoute route);

struct ChatUpstreamRequest {
  std::string body;  // what goes upstream
  ChatRoute route = ChatRoute::kAsSent;
  bool stream = false;
  std::size_t elements_received = 0;
  std::size_t elements_sent = 0;
  TokenCount tokens = 0;                         // the history before any compaction, counted
  std::optional<Uuid> session;                   // the conversation's stored compaction
  std::optional<std::string> compaction_failed;  // why the history over the threshold was not
};

class ChatGateway {
 public:
  // Fails when options.model is not a configured model or cannot be made.
  static Result<std::unique_ptr<ChatGateway>, std::string> Create(ChatGatewayOptions options,
                                                                  HeldConversationContext context);

  Result<ChatUpstreamRequest, GatewayError> Prepare(std::string_view body,
                                                    std::stop_token stop = {});

  ChatConversationBook& book() { return book_; }

 private:
  ChatGateway(ChatGatewayOptions options, HeldConversationContext context, ServedModel model)
      : options_(std::move(options)),
        context_(context),
        model_(std::move(model)),
        book_(options_.book),
        refused_(options_.book) {}

  std::shared_ptr<const ChatPrefixEntry> Revise(std::shared_ptr<const ChatPrefixEntry> entry);
  Result<TokenCount, GatewayError> Count(const Transcript& history);

  ChatGatewayOptions options_;
  HeldConversationContext context_;
  ServedModel model_;
  ChatConversationBook book_;
  // Requests (their whole chain) whose compaction was refused or rejected: the same request
  // again (a client's retry) goes on uncompacted without another attempt, and without another
  // session of the rejection in the journal.
  ChatConversationBook refused_;
};

}  // namespace harness::serve

// libFuzzer target for the Chat Completions gateway's reader of a request body and its prefix
// recognition (serve/gateway_chat_plan.h, serve/gateway_chat_prefix.h).
//
// The input is a request body. Invariants: nothing crashes or throws; a refusal has a 4xx
// status, a code, and a body in OpenAI's error shape that is strict JSON; an accepted body has
// one chain link per element of its conversation, the same links when read again, and its
// `messages` replaced by WithMessages is a strict JSON object whose `messages` is what was put
// there and whose other members are the same values; a book with a small byte limit never holds
// more than it, and what it finds is a prefix of the chain it was asked about.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/internal/json_dom.h"
#include "serve/gateway_chat_plan.h"
#include "serve/gateway_chat_prefix.h"

namespace {

using namespace harness;
using namespace harness::serve;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "gateway_chat_fuzz: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const DialectLimits limits{1u << 16, 1'000, 64};
  auto read = ReadChatCompletionRequest(body, limits);
  if (!read.ok()) {
    const GatewayError& error = read.error();
    Check(error.status >= 400 && error.status < 500, "a refusal is a 4xx");
    Check(!error.code.empty() && !error.message.empty(), "a refusal has a code and a message");
    auto parsed = ParseStrictJson(EncodeGatewayError(GatewayWire::kChatCompletions, error));
    Check(parsed.ok() && parsed->is_object() && parsed->contains("error"),
          "the error body is strict JSON in OpenAI's shape");
    const Json& inner = (*parsed)["error"];
    Check(inner["message"].is_string() && inner["type"].is_string(), "message and type");
    return 0;
  }
  const auto chain = ChatPrefixChain(read->conversation);
  Check(chain.size() == read->conversation.elements.size(), "one link per element");
  auto again = ReadChatCompletionRequest(body, limits);
  Check(again.ok() && ChatPrefixChain(again->conversation) == chain, "reading is deterministic");

  const std::string rewritten = WithMessages(read->document, "[]");
  auto parsed = ParseStrictJson(rewritten);
  Check(parsed.ok() && parsed->is_object(), "the rewritten body is a strict JSON object");
  Check((*parsed)["messages"] == Json::array(), "messages is what was put there");
  for (const auto& [name, value] : read->document.items()) {
    if (name != "messages")
      Check((*parsed)[name] == value, "the other members keep their values");
  }

  ChatConversationBook book(ChatConversationBookLimits{4, 4'096});
  for (std::size_t i = 0; i < chain.size(); ++i) {
    ChatPrefixEntry entry;
    entry.original = chain[i];
    entry.original_elements = i + 1;
    entry.replacement.push_back(read->conversation.elements[i].json);
    book.Remember(std::move(entry));
    Check(book.bytes() <= 4'096 && book.size() <= 4, "the book stays within its limits");
  }
  if (const auto found = book.Find(chain); found != nullptr) {
    const auto links = std::span(chain).first(found->original_elements);
    Check(links.back() == found->original, "a found entry is a prefix of the chain");
  }
  return 0;
}

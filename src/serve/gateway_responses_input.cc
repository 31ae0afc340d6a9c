// The Responses requests as the gateway reads them, and its compaction item
// (serve/gateway_responses.h).
#include "core/internal/json_dom.h"
#include "harness/core/sha256.h"
#include "harness/summary/summary.h"
#include "serve/gateway_responses.h"

namespace harness::serve {

namespace {

constexpr std::string_view kItemIdPrefix = "cmp_";
constexpr std::size_t kItemIdHexDigits = 48;
constexpr std::size_t kMaxContextManagementEntries = 8;

JsonLimits BodyLimits() {
  JsonLimits limits;
  limits.max_depth = DialectLimits{}.max_depth;
  return limits;
}

std::string ItemId(std::string_view content) {
  return std::string(kItemIdPrefix) + ToHex(Sha256(content)).substr(0, kItemIdHexDigits);
}

GatewayError Invalid(GatewayWire wire, std::string message) {
  return InvalidRequest(wire, "invalid_request", std::move(message));
}

// The last element that is a compaction item, or nullopt.
std::optional<std::size_t> LastCompaction(const DialectConversation& conversation) {
  for (std::size_t i = conversation.elements.size(); i > 0; --i) {
    if (conversation.elements[i - 1].kind == "compaction")
      return i - 1;
  }
  return std::nullopt;
}

}  // namespace

std::string EncodeCompactionItem(const CarriedCompaction& carried) {
  std::string content = "{\"harness_compaction\":1,\"summary\":";
  AppendJsonString(content, carried.summary);
  content.append(",\"items\":").append(carried.items).append("}");
  std::string out =
      "{\"type\":\"compaction\",\"id\":\"" + ItemId(content) + "\",\"encrypted_content\":";
  AppendJsonString(out, content);
  return out + "}";
}

Result<CarriedCompaction, std::string> ReadCompactionItem(std::string_view item) {
  auto json = ParseStrictJson(item, BodyLimits());
  if (!json.ok())
    return Fail("the compaction item is not strict JSON: " + json.error().Describe());
  auto object = JsonObject::Open(*json, "$");
  if (!object.ok())
    return Fail(std::string("the compaction item is not a JSON object"));
  const Json* type = object->Find("type");
  const Json* id = object->Find("id");
  const Json* content = object->Find("encrypted_content");
  object->Find("created_by");  // who made it: not needed to read it
  if (type == nullptr || *type != "compaction")
    return Fail(std::string("the item is not of type compaction"));
  if (auto unknown = object->RejectUnknown(); !unknown.ok())
    return Fail("the compaction item has a member it does not define: " +
                unknown.error().Describe());
  if (content == nullptr || !content->is_string() || id == nullptr || !id->is_string()) {
    return Fail(std::string(
        "the compaction item needs a string id and encrypted_content, as harness wrote them"));
  }
  const std::string text = content->get<std::string>();
  if (id->get<std::string>() != ItemId(text)) {
    return Fail(std::string(
        "the compaction item was not written by this gateway (or was changed since): its id "
        "does not match its content; send the items it replaced instead, or compact again"));
  }
  auto inner = ParseStrictJson(text, BodyLimits());
  if (!inner.ok())
    return Fail("the compaction item's content is not strict JSON: " + inner.error().Describe());
  auto fields = JsonObject::Open(*inner, "$.encrypted_content");
  if (!fields.ok())
    return Fail(std::string("the compaction item's content is not a JSON object"));
  auto version = fields->RequireUint("harness_compaction");
  if (!version.ok() || *version != 1)
    return Fail(std::string("the compaction item's content is not of version 1"));
  auto summary = fields->RequireString("summary");
  if (!summary.ok())
    return Fail("the compaction item's content has no summary: " + summary.error().Describe());
  auto items = fields->RequireNonNull("items");
  if (!items.ok() || !(*items)->is_array())
    return Fail(std::string("the compaction item's content has no array of items"));
  if (auto unknown = fields->RejectUnknown(); !unknown.ok())
    return Fail("the compaction item's content has a member it does not define: " +
                unknown.error().Describe());
  if (auto parsed = ParseSummary(*summary); !parsed.ok())
    return Fail(std::string("the compaction item's summary is not a valid summary"));
  // The items' exact text: harness writes the content in one spelling, so the array is what
  // follows that spelling's prefix.
  std::string prefix = "{\"harness_compaction\":1,\"summary\":";
  AppendJsonString(prefix, *summary);
  prefix += ",\"items\":";
  if (!text.starts_with(prefix) || text.back() != '}')
    return Fail(std::string("the compaction item's content is not as harness writes it"));
  return CarriedCompaction{std::move(summary).value(),
                           text.substr(prefix.size(), text.size() - 1 - prefix.size())};
}

Result<Json, GatewayError> ParseResponsesBody(GatewayWire wire, std::string_view body) {
  auto json = ParseStrictJson(body, BodyLimits());
  if (!json.ok()) {
    return Fail(InvalidRequest(wire, "invalid_json",
                               "the body is not strict JSON: " + json.error().Describe()));
  }
  if (!json->is_object())
    return Fail(Invalid(wire, "the body must be a JSON object (a Responses request)"));
  return std::move(json).value();
}

Result<ResponsesInput, GatewayError> ReadResponsesInput(GatewayWire wire, const Json& body,
                                                        std::string_view text) {
  ResponsesInput input;
  const auto instructions = body.find("instructions");
  if (instructions != body.end() && !instructions->is_null()) {
    if (!instructions->is_string())
      return Fail(Invalid(wire, "$.instructions must be a string"));
    input.system = instructions->get<std::string>();
  }
  const auto items = body.find("input");
  if (items == body.end() || items->is_null())
    return Fail(Invalid(wire, "$.input is required: the conversation's items (or a string)"));
  if (items->is_string()) {
    input.items = "[{\"type\":\"message\",\"role\":\"user\",\"content\":";
    AppendJsonString(input.items, items->get<std::string>());
    input.items += "}]";
  } else if (!items->is_array()) {
    return Fail(Invalid(wire, "$.input must be a string or an array of items"));
  }
  // An array is read from the body's own bytes, so that each item is kept exactly as sent.
  auto read = ReadOpenAiResponses(items->is_array() ? text : std::string_view(input.items));
  if (!read.ok())
    return Fail(Invalid(wire, read.error().Describe()));
  if (items->is_array()) {
    input.items = "[";
    for (const DialectElement& element : read->elements)
      input.items.append(input.items.size() > 1 ? "," : "").append(element.json);
    input.items += "]";
  }
  const std::optional<std::size_t> last = LastCompaction(*read);
  if (!last) {
    input.conversation = std::move(read).value();
    return input;
  }
  auto carried = ReadCompactionItem(read->elements[*last].json);
  if (!carried.ok()) {
    return Fail(
        InvalidRequest(wire, "invalid_compaction_item",
                       "$.input[" + std::to_string(*last) + "]: " + std::move(carried).error()));
  }
  // What the item carries, then every item after it, as sent.
  std::string rewritten = carried->items;
  rewritten.pop_back();
  bool empty = rewritten.find_first_not_of(" \t\r\n", 1) == std::string::npos;
  for (std::size_t i = *last + 1; i < read->elements.size(); ++i) {
    rewritten.append(empty ? "" : ",").append(read->elements[i].json);
    empty = false;
  }
  rewritten += "]";
  auto again = ReadOpenAiResponses(rewritten);
  if (!again.ok()) {
    return Fail(
        InvalidRequest(wire, "invalid_compaction_item",
                       "$.input[" + std::to_string(*last) +
                           "]: the items it carries cannot be read: " + again.error().Describe()));
  }
  if (LastCompaction(*again)) {
    return Fail(InvalidRequest(
        wire, "invalid_compaction_item",
        "$.input[" + std::to_string(*last) + "]: the items it carries hold a compaction item"));
  }
  input.items = std::move(rewritten);
  input.conversation = std::move(again).value();
  input.rewritten = true;
  return input;
}

Result<std::optional<std::uint64_t>, GatewayError> ReadCompactThreshold(GatewayWire wire,
                                                                        const Json& body) {
  const auto member = body.find("context_management");
  if (member == body.end() || member->is_null())
    return std::optional<std::uint64_t>();
  if (!member->is_array() || member->size() > kMaxContextManagementEntries) {
    return Fail(Invalid(wire, "$.context_management must be an array of at most " +
                                  std::to_string(kMaxContextManagementEntries) + " entries"));
  }
  std::optional<std::uint64_t> threshold;
  for (std::size_t i = 0; i < member->size(); ++i) {
    const std::string path = "$.context_management[" + std::to_string(i) + "]";
    auto entry = JsonObject::Open((*member)[i], path);
    if (!entry.ok())
      return Fail(Invalid(wire, path + " must be an object"));
    auto type = entry->RequireString("type");
    if (!type.ok())
      return Fail(Invalid(wire, type.error().Describe()));
    if (*type != "compaction") {
      return Fail(Invalid(wire, path +
                                    ".type: only \"compaction\" is served by this gateway, not " +
                                    QuoteForDetail(*type)));
    }
    if (threshold)
      return Fail(Invalid(wire, path + ": a second compaction entry"));
    auto value = entry->RequireUint("compact_threshold", kMaxCompactThreshold);
    if (!value.ok() || *value == 0) {
      return Fail(
          Invalid(wire, path + ".compact_threshold must be a whole number of tokens from 1 to " +
                            std::to_string(kMaxCompactThreshold)));
    }
    if (auto unknown = entry->RejectUnknown(); !unknown.ok())
      return Fail(Invalid(wire, unknown.error().Describe()));
    threshold = *value;
  }
  return threshold;
}

Result<ConversationCompactRequest, GatewayError> CompactionOfInput(GatewayWire wire,
                                                                   const Json& body,
                                                                   ResponsesInput input,
                                                                   bool journal_by_default) {
  for (const std::string_view refused : {"previous_response_id", "conversation"}) {
    const auto member = body.find(std::string(refused));
    if (member != body.end() && !member->is_null()) {
      return Fail(Invalid(wire, "$." + std::string(refused) +
                                    ": harness keeps no responses to continue from; send the "
                                    "whole conversation as input"));
    }
  }
  ConversationCompactRequest request;
  request.dialect = Dialect::kOpenAiResponses;
  request.conversation = std::move(input.conversation);
  request.conversation.system = std::move(input.system);
  request.store = journal_by_default;
  const auto store = body.find("store");
  if (store != body.end() && !store->is_null()) {
    if (!store->is_boolean())
      return Fail(Invalid(wire, "$.store must be true or false"));
    request.store = request.store && store->get<bool>();
  }
  return request;
}

Result<ConversationCompactRequest, GatewayError> ReadResponsesCompaction(GatewayWire wire,
                                                                         std::string_view body,
                                                                         bool journal_by_default) {
  HARNESS_TRY(Json json, ParseResponsesBody(wire, body));
  HARNESS_TRY(ResponsesInput input, ReadResponsesInput(wire, json, body));
  return CompactionOfInput(wire, json, std::move(input), journal_by_default);
}

std::string ResponsesUsage(std::uint64_t input_tokens, std::uint64_t output_tokens) {
  return "{\"input_tokens\":" + std::to_string(input_tokens) +
         ",\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":" +
         std::to_string(output_tokens) +
         ",\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":" +
         std::to_string(input_tokens + output_tokens) + "}";
}

std::string HarnessCompactionMember(const HeldCompaction& held) {
  std::string out = "{\"summary\":";
  AppendJsonString(out, held.compacted.summary);
  out.append(",\"retained_items\":").append(std::to_string(held.retained_elements));
  out.append(",\"retained_verbatim\":").append(held.verbatim ? "true" : "false");
  if (held.compacted.stored) {
    out.append(",\"session_id\":\"").append(held.compacted.stored->session.ToString());
    out.append("\",\"loop_id\":\"").append(held.compacted.stored->loop.ToString()).append("\"");
  }
  return out + "}";
}

}  // namespace harness::serve

// POST /v1/responses: the OpenAI Responses wire of the gateway (docs/spec/gateway.md
// "POST /v1/responses"): forwarded as sent, or compacted by harness first when the request's
// context_management asks for it and its input crosses the threshold; an input that ends in a
// compaction trigger is answered by harness alone with one compaction item, and an input that
// holds harness's compaction item goes upstream with what the item carries in its place.
#include "serve/gateway_responses.h"

#include <algorithm>
#include <chrono>

#include "core/internal/json_dom.h"
#include "serve/gateway.h"

namespace harness::serve {

namespace {

constexpr GatewayWire kWire = GatewayWire::kResponses;

Result<bool, GatewayError> AsksForStream(const Json& body) {
  const auto stream = body.find("stream");
  if (stream == body.end() || stream->is_null())
    return false;
  if (!stream->is_boolean())
    return Fail(InvalidRequest(kWire, "invalid_request", "$.stream must be true or false"));
  return stream->get<bool>();
}

// The input's size as the offline model counts it (its counter: exact where the tokenizer is
// there, else a conservative estimate), with the instructions.
Result<std::uint64_t, GatewayError> CountInput(const GatewayServices& services,
                                               const ResponsesInput& input, std::stop_token stop) {
  const auto offline = services.compaction.models->find("offline");
  if (offline == services.compaction.models->end())
    return Fail(FromApiError(kWire, {ApiErrorKind::kInternal, "no offline model to count with"}));
  auto model = offline->second.make();
  if (!model.ok() || model->counter == nullptr) {
    return Fail(FromApiError(kWire, {ApiErrorKind::kInternal, "the offline model cannot count"}));
  }
  InferenceRequest request;
  request.model = model->model;
  request.system = input.system;
  request.messages = input.conversation.transcript;
  auto count = model->counter->Count(request, std::move(stop));
  if (!count.ok()) {
    return Fail(FromApiError(
        kWire, {ApiErrorKind::kInternal, "the input could not be counted: " +
                                             std::string(CountErrorKindName(count.error().kind))}));
  }
  return static_cast<std::uint64_t>(count->input_tokens);
}

// A collected Response with the compaction item first in its output.
std::string WithCompactionItem(const std::string& body, const Json& item) {
  auto json = ParseStrictJson(body, JsonLimits{});
  if (!json.ok() || !json->is_object())
    return body;  // not a Response: as the upstream sent it
  auto output = json->find("output");
  if (output == json->end() || !output->is_array())
    return body;
  output->insert(output->begin(), item);
  return json->dump();
}

// What kind of item the input's element is, or "" (not an object with a string type).
std::string_view ItemType(const Json& item) {
  if (!item.is_object())
    return {};
  const auto type = item.find("type");
  return type != item.end() && type->is_string()
             ? std::string_view(type->get_ref<const std::string&>())
             : std::string_view();
}

// The input ends in {"type":"compaction_trigger"}: the body-signal form of a compaction request
// (Codex CLI sends its history so, expecting one compaction item back).
bool EndsInCompactionTrigger(const Json& body) {
  const auto input = body.find("input");
  return input != body.end() && input->is_array() && !input->empty() &&
         ItemType(input->back()) == "compaction_trigger";
}

// The input holds a compaction item, which the upstream would not know: it must be read (and
// replaced by what it carries) even when no compaction is asked for.
bool HoldsCompactionItem(const Json& body) {
  const auto input = body.find("input");
  if (input == body.end() || !input->is_array())
    return false;
  for (const Json& item : *input) {
    if (ItemType(item) == "compaction")
      return true;
  }
  return false;
}

// The Response of a compaction trigger, collected: one output item, the compaction.
std::string TriggerResponse(const std::string& id, std::int64_t created, const Json& model,
                            const Json& item, const std::string& status,
                            const HeldCompaction* held) {
  Json response = Json::object();
  response["id"] = id;
  response["object"] = "response";
  response["created_at"] = created;
  response["status"] = status;
  response["model"] = model;
  response["output"] = held != nullptr ? Json::array({item}) : Json::array();
  std::string out = response.dump();
  if (held == nullptr)
    return out;
  const CompactionReport& report = held->compacted.report;
  out.pop_back();
  out.append(",\"usage\":")
      .append(ResponsesUsage(report.before ? report.before->input_tokens : 0,
                             report.after.input_tokens));
  out.append(",\"harness\":").append(HarnessCompactionMember(*held));
  return out + "}";
}

std::string SseFrame(std::string_view type, const std::string& data) {
  std::string out = "event: ";
  out.append(type).append("\ndata: ").append(data).append("\n\n");
  return out;
}

// A request whose input ends in a compaction trigger (docs/spec/gateway.md, "The compaction
// trigger"): harness compacts the items before it and answers with one compaction item, itself,
// without the upstream. The newest user-started segment is the tail, and at most a quarter of
// the input: the caller asked for a compaction now, so there must be something to summarize.
void ServeCompactionTrigger(const GatewayCall& call, const GatewayServices& services, Json body,
                            bool stream, GatewayRelay& out) {
  Json& items = body["input"];
  items.erase(items.size() - 1);
  const std::string text = body.dump();
  auto input = ReadResponsesInput(kWire, body, text);
  if (!input.ok())
    return RespondGatewayError(out, kWire, input.error());
  auto count = CountInput(services, *input, call.stop);
  if (!count.ok())
    return RespondGatewayError(out, kWire, count.error());
  auto request = CompactionOfInput(kWire, body, std::move(input).value(), services.journal);
  if (!request.ok())
    return RespondGatewayError(out, kWire, request.error());
  request->keep_recent_segments = 1;
  request->keep_recent_tokens = std::max<std::uint64_t>(1, *count / 4);
  auto held = CompactHeldConversationParts(std::move(request).value(), services.compaction);
  if (!held.ok())
    return RespondGatewayError(out, kWire, FromApiError(kWire, held.error()));
  auto item = ParseResponsesBody(
      kWire, EncodeCompactionItem(CarriedCompaction{held->compacted.summary, held->messages}));
  auto id = services.compaction.env->NewId();
  if (!item.ok() || !id.ok()) {
    return RespondGatewayError(out, kWire,
                               FromApiError(kWire, {ApiErrorKind::kInternal,
                                                    "the compaction's answer cannot be written"}));
  }
  const std::string response_id = "resp_" + id->ToString();
  const std::int64_t created = std::chrono::duration_cast<std::chrono::seconds>(
                                   services.compaction.env->WallNow().time_since_epoch())
                                   .count();
  const Json model = body.contains("model") ? body["model"] : Json();
  const std::string done = TriggerResponse(response_id, created, model, *item, "completed", &*held);
  if (!stream) {
    if (out.Start(200, "application/json"))
      out.Write(done);
    return out.Finish();
  }
  if (!out.Start(200, "text/event-stream"))
    return out.Finish();
  std::uint64_t seq = 0;
  const auto event = [&](std::string_view type, std::string_view member, const std::string& json) {
    std::string data = "{\"type\":\"";
    data.append(type).append("\",\"sequence_number\":").append(std::to_string(seq++));
    if (type.starts_with("response.output_item"))
      data.append(",\"output_index\":0");
    data.append(",\"").append(member).append("\":").append(json).append("}");
    return out.Write(SseFrame(type, data));
  };
  const std::string started =
      TriggerResponse(response_id, created, model, *item, "in_progress", nullptr);
  const std::string item_json = item->dump();
  (void)(event("response.created", "response", started) &&
         event("response.in_progress", "response", started) &&
         event("response.output_item.added", "item", item_json) &&
         event("response.output_item.done", "item", item_json) &&
         event("response.completed", "response", done));
  out.Finish();
}

}  // namespace

CompactionItemInStream::CompactionItemInStream(Json item) : item_(std::move(item)) {}

std::string CompactionItemInStream::operator()(std::string_view bytes) {
  if (broken_)
    return std::string(bytes);
  std::vector<SseEvent> events;
  if (!decoder_.Feed(bytes, events).ok()) {
    broken_ = true;  // an event past the decoder's bounds: the rest passes as it comes
    return std::string(bytes);
  }
  std::string out;
  for (SseEvent& event : events)
    out += Rewrite(event);
  return out;
}

std::string CompactionItemInStream::Frame(std::string_view name, const std::string& data) {
  std::string out;
  if (!name.empty())
    out.append("event: ").append(name).append("\n");
  return out.append("data: ").append(data).append("\n\n");
}

std::string CompactionItemInStream::Rewrite(const SseEvent& event) {
  auto data = ParseStrictJson(event.data);
  if (!data.ok() || !data->is_object())
    return Frame(event.event, event.data);
  Json& json = *data;
  std::string out;
  if (injected_) {
    if (auto index = json.find("output_index"); index != json.end() && index->is_number_unsigned())
      *index = index->get<std::uint64_t>() + 1;
    if (auto seq = json.find("sequence_number"); seq != json.end() && seq->is_number_unsigned())
      *seq = seq->get<std::uint64_t>() + 2;
  }
  if (auto response = json.find("response"); response != json.end() && response->is_object()) {
    if (auto output = response->find("output"); output != response->end() && output->is_array())
      output->insert(output->begin(), item_);
  }
  out += Frame(event.event, json.dump());
  if (!injected_) {
    injected_ = true;
    std::uint64_t seq = 0;
    if (auto s = json.find("sequence_number"); s != json.end() && s->is_number_unsigned())
      seq = s->get<std::uint64_t>();
    for (const std::string_view type :
         {"response.output_item.added", "response.output_item.done"}) {
      Json announce = Json::object();
      announce["type"] = type;
      announce["output_index"] = 0;
      announce["item"] = item_;
      announce["sequence_number"] = ++seq;
      out += Frame(type, announce.dump());
    }
  }
  return out;
}

void ServeResponses(const GatewayCall& call, const GatewayServices& services, GatewayRelay& out) {
  auto json = ParseResponsesBody(kWire, call.body);
  if (!json.ok())
    return RespondGatewayError(out, kWire, json.error());
  auto stream = AsksForStream(*json);
  if (!stream.ok())
    return RespondGatewayError(out, kWire, stream.error());
  auto threshold = ReadCompactThreshold(kWire, *json);
  if (!threshold.ok())
    return RespondGatewayError(out, kWire, threshold.error());
  if (EndsInCompactionTrigger(*json))
    return ServeCompactionTrigger(call, services, std::move(json).value(), *stream, out);
  if (!*threshold && !HoldsCompactionItem(*json)) {
    // No compaction asked for: the upstream gets the request exactly as sent.
    return ForwardToRelay(services, kWire,
                          UpstreamCall{"/responses", call.body, call.passed, *stream}, call.stop,
                          out);
  }
  auto input = ReadResponsesInput(kWire, *json, call.body);
  if (!input.ok())
    return RespondGatewayError(out, kWire, input.error());
  bool compact = false;
  if (*threshold) {
    auto count = CountInput(services, *input, call.stop);
    if (!count.ok())
      return RespondGatewayError(out, kWire, count.error());
    compact = *count >= **threshold;
  }
  if (!compact && !input->rewritten) {
    return ForwardToRelay(services, kWire,
                          UpstreamCall{"/responses", call.body, call.passed, *stream}, call.stop,
                          out);
  }
  std::optional<HeldCompaction> held;
  std::string items = input->items;
  const bool input_rewritten = input->rewritten;
  if (compact) {
    auto request = CompactionOfInput(kWire, *json, std::move(input).value(), services.journal);
    if (!request.ok())
      return RespondGatewayError(out, kWire, request.error());
    // The tail kept whole is at most half the threshold, so that what is sent is well under it.
    request->keep_recent_tokens = std::max<std::uint64_t>(1, **threshold / 2);
    auto parts = CompactHeldConversationParts(std::move(request).value(), services.compaction);
    if (parts.ok()) {
      held = std::move(parts).value();
      items = held->messages;
    } else if (parts.error().kind != ApiErrorKind::kCompactionRejected) {
      return RespondGatewayError(out, kWire, FromApiError(kWire, parts.error()));
    } else if (!input_rewritten) {
      // Nothing the compaction could take (a conversation that all fits its tail): the turn
      // goes on as asked, and the upstream judges whether it fits.
      return ForwardToRelay(services, kWire,
                            UpstreamCall{"/responses", call.body, call.passed, *stream}, call.stop,
                            out);
    }
  }
  // harness served context_management: the upstream gets the input it would have had, and is
  // not asked to compact again.
  Json forwarded = std::move(json).value();
  auto input_items = ParseResponsesBody(kWire, "{\"input\":" + items + "}");
  if (!input_items.ok())  // harness wrote them: a failure here is harness's own
    return RespondGatewayError(
        out, kWire,
        FromApiError(kWire, {ApiErrorKind::kInternal, "the compacted input cannot be read back"}));
  forwarded["input"] = std::move((*input_items)["input"]);
  forwarded.erase("context_management");
  const UpstreamCall call_upstream{"/responses", forwarded.dump(), call.passed, *stream};
  if (!held)
    return ForwardToRelay(services, kWire, call_upstream, call.stop, out);
  auto item = ParseResponsesBody(
      kWire, EncodeCompactionItem(CarriedCompaction{held->compacted.summary, held->messages}));
  if (!item.ok()) {
    return RespondGatewayError(
        out, kWire,
        FromApiError(kWire, {ApiErrorKind::kInternal, "the compaction item cannot be read back"}));
  }
  if (*stream) {
    CompactionItemInStream rewrite(*item);
    return ForwardToRelay(services, kWire, call_upstream, call.stop, out,
                          [&rewrite](std::string_view bytes) { return rewrite(bytes); });
  }
  if (services.upstream == nullptr)
    return ForwardToRelay(services, kWire, call_upstream, call.stop, out);  // answers 501
  auto answer = services.upstream->Fetch(call_upstream, call.stop);
  if (!answer.ok())
    return RespondGatewayError(out, kWire, UpstreamUnavailable(kWire, answer.error().Describe()));
  const auto type = answer->Header("content-type");
  if (out.Start(static_cast<unsigned>(answer->status),
                type ? std::string(*type) : std::string("application/json"))) {
    out.Write(answer->success() ? WithCompactionItem(answer->body, *item) : answer->body);
  }
  out.Finish();
}

}  // namespace harness::serve

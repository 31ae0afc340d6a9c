#include "serve/api.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <span>

#include "content/internal/codec_value.h"
#include "core/internal/json_dom.h"
#include "harness/content/codec.h"
#include "harness/event/wire.h"
#include "serve/static_assets.h"

namespace harness::serve {

namespace {

struct KindInfo {
  std::string_view name;
  unsigned status;
};

// In the order of ApiErrorKind.
constexpr std::array<KindInfo, kApiErrorKindCount> kKinds = {{
    {"invalid_json", 400},
    {"invalid_request", 400},
    {"invalid_query", 400},
    {"invalid_id", 400},
    {"unknown_model", 400},
    {"invalid_argument", 400},
    {"unauthorized", 401},
    {"not_found", 404},
    {"session_not_found", 404},
    {"loop_not_found", 404},
    {"command_not_found", 404},
    {"tool_call_not_found", 404},
    {"method_not_allowed", 405},
    {"lease_held", 409},
    {"loop_exited", 409},
    {"compaction_unsupported", 409},
    {"session_faulted", 409},
    {"session_suspended", 409},
    {"restore_refused", 409},
    {"tool_call_answered", 409},
    {"too_large", 413},
    {"journal", 500},
    {"internal", 500},
    {"shutting_down", 503},
    {"too_many_sessions", 503},
    {"origin_not_allowed", 403},
    {"message_not_found", 404},
    {"not_pinnable", 409},
    {"nothing_to_undo", 409},
    {"loop_busy", 409},
    {"undo_refused", 409},
    {"no_proposal", 404},
    {"nothing_to_mask", 409},
    {"not_masked", 404},
    {"mask_refused", 409},
    {"invalid_header", 400},
    {"host_not_allowed", 421},
    {"unsupported_media_type", 415},
    {"compaction_rejected", 422},
    {"input_not_queued", 409},
}};
static_assert(!kKinds.back().name.empty(), "a kind without its name and status");

ApiError Error(ApiErrorKind kind, std::string detail) {
  return ApiError{kind, std::move(detail)};
}

std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  if (path.empty() || path.front() != '/')
    return out;
  std::size_t at = 1;
  for (;;) {
    const std::size_t slash = path.find('/', at);
    out.push_back(path.substr(at, slash == std::string_view::npos ? slash : slash - at));
    if (slash == std::string_view::npos)
      return out;
    at = slash + 1;
  }
}

Result<Uuid, ApiError> IdSegment(std::string_view text, std::string_view what) {
  auto id = Uuid::ParseCanonical(text);
  if (!id.ok()) {
    return Fail(Error(ApiErrorKind::kInvalidId, std::string(what) + " id " + QuoteForDetail(text) +
                                                    " is not a canonical lowercase UUID"));
  }
  // The nil UUID is well formed but names nothing: the runtime never mints it (the CLI refuses
  // it the same way, cli/arguments.cc).
  if (id->IsZero()) {
    return Fail(Error(ApiErrorKind::kInvalidId, std::string(what) + " id " + id->ToString() +
                                                    " is the nil UUID, which no " +
                                                    std::string(what) + " has"));
  }
  return *id;
}

bool Digit(char c) {
  return c >= '0' && c <= '9';
}

ApiError NoRoute() {
  return Error(ApiErrorKind::kNotFound,
               "no such resource; the API is under /v1, the inspector at /");
}

// Whether `path`'s segments fit `pattern`'s: the same number, and equal where the pattern's is a
// literal ({name} fits any segment).
bool Fits(const std::vector<std::string_view>& path, const std::vector<std::string_view>& pattern) {
  if (path.size() != pattern.size())
    return false;
  for (std::size_t i = 0; i < path.size(); ++i) {
    const bool placeholder = !pattern[i].empty() && pattern[i].front() == '{';
    if (!placeholder && pattern[i] != path[i])
      return false;
  }
  return true;
}

constexpr std::array<RouteSpec, 33> kRoutes = {{
    {"POST", "/v1/sessions", RouteKind::kCreateSession},
    {"GET", "/v1/sessions", RouteKind::kListSessions},
    {"GET", "/v1/sessions/{session}", RouteKind::kGetSession},
    {"DELETE", "/v1/sessions/{session}", RouteKind::kDeleteSession},
    {"GET", "/v1/sessions/{session}/export", RouteKind::kExport},
    {"GET", "/v1/sessions/{session}/events", RouteKind::kEvents},
    {"POST", "/v1/sessions/{session}/loops/{loop}/input", RouteKind::kInput},
    {"POST", "/v1/sessions/{session}/loops/{loop}/compact", RouteKind::kCompact},
    {"POST", "/v1/sessions/{session}/loops/{loop}/interrupt", RouteKind::kInterrupt},
    {"POST", "/v1/sessions/{session}/loops/{loop}/undo", RouteKind::kUndo},
    {"PUT", "/v1/sessions/{session}/loops/{loop}/pins/{message}", RouteKind::kPin},
    {"DELETE", "/v1/sessions/{session}/loops/{loop}/pins/{message}", RouteKind::kUnpin},
    {"POST", "/v1/sessions/{session}/loops/{loop}/proposals/{attempt}/approve",
     RouteKind::kApprove},
    {"POST", "/v1/sessions/{session}/loops/{loop}/proposals/{attempt}/discard",
     RouteKind::kDiscard},
    {"POST", "/v1/sessions/{session}/loops/{loop}/mask", RouteKind::kMask},
    {"POST", "/v1/sessions/{session}/loops/{loop}/unmask", RouteKind::kUnmaskAll},
    {"GET", "/v1/sessions/{session}/loops/{loop}/masked/{message}", RouteKind::kMaskedOriginal},
    {"DELETE", "/v1/sessions/{session}/loops/{loop}/masked/{message}", RouteKind::kUnmask},
    {"DELETE", "/v1/sessions/{session}/loops/{loop}/inputs/{input}", RouteKind::kCancelInput},
    {"DELETE", "/v1/sessions/{session}/loops/{loop}/delegate_requests/{request}",
     RouteKind::kCancelDelegate},
    {"GET", "/v1/sessions/{session}/loops/{loop}/history", RouteKind::kHistory},
    {"GET", "/v1/sessions/{session}/loops/{loop}/context", RouteKind::kContext},
    {"GET", "/v1/sessions/{session}/loops/{loop}/tool_calls", RouteKind::kToolCalls},
    {"POST", "/v1/sessions/{session}/loops/{loop}/tool_results", RouteKind::kToolResults},
    {"GET", "/v1/sessions/{session}/commands/{command}", RouteKind::kGetSessionCommand},
    {"GET", "/v1/commands/{command}", RouteKind::kGetCommand},
    {"GET", "/v1/openapi.json", RouteKind::kOpenApi},
    {"GET", "/metrics", RouteKind::kMetrics},
    {"POST", "/v1/compact", RouteKind::kCompactConversation},
    {"POST", "/v1/responses", RouteKind::kGatewayResponses},
    {"POST", "/v1/responses/compact", RouteKind::kGatewayResponsesCompact},
    {"POST", "/v1/messages", RouteKind::kGatewayMessages},
    {"POST", "/v1/chat/completions", RouteKind::kGatewayChatCompletions},
}};

ApiError FromJson(const JsonError& error) {
  switch (error.kind) {
    case JsonErrorKind::kTooLarge:
    case JsonErrorKind::kTooDeep:
    case JsonErrorKind::kSyntax:
    case JsonErrorKind::kDuplicateMember:
      return Error(ApiErrorKind::kInvalidJson, error.Describe());
    default:
      return Error(ApiErrorKind::kInvalidRequest, error.Describe());
  }
}

Result<Json, ApiError> ParseBody(std::string_view body) {
  JsonLimits limits;
  limits.max_depth = kMaxJsonDepth;
  // The HTTP layer bounds the body; this bound only keeps the parser's own limit out of the way.
  const std::string_view text = body.empty() ? std::string_view("{}") : body;
  limits.max_bytes = text.size();
  auto parsed = ParseStrictJson(text, limits);
  if (!parsed.ok())
    return Fail(FromJson(parsed.error()));
  return std::move(parsed).value();
}

template <class T>
Result<T, ApiError> FromJsonResult(Result<T, JsonError> result) {
  if (!result.ok())
    return Fail(FromJson(result.error()));
  return std::move(result).value();
}

Status<ApiError> FromJsonStatus(Status<JsonError> status) {
  if (!status.ok())
    return Fail(FromJson(status.error()));
  return {};
}

Result<std::string, ApiError> RequireText(JsonObject& object, std::string_view name) {
  return FromJsonResult(object.RequireString(name));
}

Result<std::optional<std::string>, ApiError> OptionalText(JsonObject& object,
                                                          std::string_view name) {
  const Json* value = object.Find(name);
  if (value == nullptr)
    return std::optional<std::string>();
  HARNESS_TRY(std::string text, FromJsonResult(JsonAsString(*value, object.MemberPath(name))));
  return std::optional<std::string>(std::move(text));
}

ApiError Invalid(std::string detail) {
  return Error(ApiErrorKind::kInvalidRequest, std::move(detail));
}

Status<ApiError> RejectUnknown(const JsonObject& object) {
  return FromJsonStatus(object.RejectUnknown());
}

// The array member `name` of `object`, with at most `max` elements (at least one when `min1`).
Result<const Json*, ApiError> BoundedArray(JsonObject& object, std::string_view name,
                                           std::size_t max, bool min1) {
  HARNESS_TRY(const Json* array, FromJsonResult(object.RequireNonNull(name)));
  if (!array->is_array()) {
    return Fail(Invalid(object.MemberPath(name) + ": expected an array, got " +
                        std::string(JsonTypeName(*array))));
  }
  if (array->size() > max || (min1 && array->empty())) {
    return Fail(Invalid(object.MemberPath(name) + ": from " + (min1 ? "1" : "0") + " to " +
                        std::to_string(max) + " elements"));
  }
  return array;
}

Result<ClientToolRequest, ApiError> DecodeTool(const Json& value, std::string path) {
  HARNESS_TRY(JsonObject object, FromJsonResult(JsonObject::Open(value, std::move(path))));
  ClientToolRequest tool;
  HARNESS_TRY(tool.name, RequireText(object, "name"));
  if (!IsToolName(tool.name)) {
    return Fail(Invalid(object.MemberPath("name") + ": " + QuoteForDetail(tool.name, 32) +
                        " is not 1 to " + std::to_string(kMaxToolNameBytes) +
                        " characters of A-Z, a-z, 0-9, _ and -"));
  }
  HARNESS_TRY(auto description, OptionalText(object, "description"));
  tool.description = description.value_or("");
  if (tool.description.size() > kMaxToolDescriptionBytes) {
    return Fail(Invalid(object.MemberPath("description") + ": over " +
                        std::to_string(kMaxToolDescriptionBytes) + " bytes"));
  }
  if (const Json* schema = object.Find("input_schema")) {
    if (!schema->is_object()) {
      return Fail(Invalid(object.MemberPath("input_schema") +
                          ": expected a JSON Schema object, got " +
                          std::string(JsonTypeName(*schema))));
    }
    tool.input_schema = schema->dump();
    if (tool.input_schema.size() > kMaxToolSchemaBytes) {
      return Fail(Invalid(object.MemberPath("input_schema") + ": over " +
                          std::to_string(kMaxToolSchemaBytes) + " bytes"));
    }
  }
  HARNESS_CHECK(RejectUnknown(object));
  return tool;
}

Result<std::vector<ClientToolRequest>, ApiError> DecodeTools(JsonObject& loop) {
  HARNESS_TRY(const Json* tools, BoundedArray(loop, "tools", kMaxLoopTools, false));
  std::vector<ClientToolRequest> out;
  for (std::size_t i = 0; i < tools->size(); ++i) {
    HARNESS_TRY(ClientToolRequest tool, DecodeTool((*tools)[i], loop.ElementPath("tools", i)));
    for (const ClientToolRequest& earlier : out) {
      if (earlier.name == tool.name) {
        return Fail(Invalid(loop.ElementPath("tools", i) + ".name: " +
                            QuoteForDetail(tool.name, 32) + " names an earlier tool too"));
      }
    }
    out.push_back(std::move(tool));
  }
  return out;
}

// The optional member "coverage": "off", "report", "repair" or "enforce".
Result<std::optional<CoverageMode>, ApiError> OptionalCoverage(JsonObject& object) {
  HARNESS_TRY(auto coverage, OptionalText(object, "coverage"));
  if (!coverage)
    return std::optional<CoverageMode>();
  if (*coverage == "off")
    return std::optional(CoverageMode::kOff);
  if (*coverage == "report")
    return std::optional(CoverageMode::kReport);
  if (*coverage == "repair")
    return std::optional(CoverageMode::kRepair);
  if (*coverage == "enforce")
    return std::optional(CoverageMode::kEnforce);
  return Fail(Error(
      ApiErrorKind::kInvalidRequest,
      object.MemberPath("coverage") + " must be \"off\", \"report\", \"repair\" or \"enforce\""));
}

// The optional member `name`: "offline" or a configured model's name.
Result<CompactorChoice, ApiError> OptionalCompactor(JsonObject& object, std::string_view name) {
  HARNESS_TRY(auto compactor, OptionalText(object, name));
  if (!compactor || *compactor == "offline")
    return CompactorChoice{};
  if (compactor->empty()) {
    return Fail(Error(ApiErrorKind::kInvalidRequest,
                      object.MemberPath(name) + ": empty (\"offline\" or a model name)"));
  }
  return CompactorChoice{false, *compactor};
}

Result<LoopRequest, ApiError> DecodeLoop(const Json& value, std::string path) {
  HARNESS_TRY(JsonObject object, FromJsonResult(JsonObject::Open(value, std::move(path))));
  LoopRequest loop;
  HARNESS_TRY(loop.model, RequireText(object, "model"));
  if (loop.model.empty())
    return Fail(Error(ApiErrorKind::kInvalidRequest, object.MemberPath("model") + ": empty"));
  HARNESS_TRY(loop.compactor, OptionalCompactor(object, "compactor"));
  HARNESS_TRY(auto system, OptionalText(object, "system_prompt"));
  loop.system_prompt = system.value_or("");
  if (const Json* policy = object.Find("policy")) {
    HARNESS_TRY(JsonObject p,
                FromJsonResult(JsonObject::Open(*policy, object.MemberPath("policy"))));
    if (const Json* automatic = p.Find("automatic")) {
      HARNESS_TRY(loop.automatic_compaction,
                  FromJsonResult(JsonAsBool(*automatic, p.MemberPath("automatic"))));
    }
    HARNESS_TRY(auto masking, OptionalText(p, "masking"));
    if (masking && *masking != "first" && *masking != "off") {
      return Fail(Error(ApiErrorKind::kInvalidRequest,
                        p.MemberPath("masking") + " must be \"first\" or \"off\""));
    }
    loop.mask_first = !masking || *masking == "first";
    HARNESS_TRY(loop.coverage, OptionalCoverage(p));
    if (const Json* segments = p.Find("keep_recent_segments")) {
      HARNESS_TRY(loop.keep_recent_segments,
                  FromJsonResult(JsonAsUint(*segments, p.MemberPath("keep_recent_segments"),
                                            kMaxKeepRecentSegments)));
    }
    if (const Json* tokens = p.Find("keep_recent_tokens")) {
      HARNESS_TRY(loop.keep_recent_tokens,
                  FromJsonResult(JsonAsUint(*tokens, p.MemberPath("keep_recent_tokens"),
                                            kMaxKeepRecentTokens)));
    }
    if (const Json* steps = p.Find("max_steps_per_turn")) {
      HARNESS_TRY(
          loop.max_steps_per_turn,
          FromJsonResult(JsonAsUint(*steps, p.MemberPath("max_steps_per_turn"), kMaxStepsPerTurn)));
      if (*loop.max_steps_per_turn == 0) {
        return Fail(Error(ApiErrorKind::kInvalidRequest,
                          p.MemberPath("max_steps_per_turn") + " must be at least 1"));
      }
    }
    if (auto unknown = FromJsonStatus(p.RejectUnknown()); !unknown.ok())
      return Fail(std::move(unknown).error());
  }
  if (object.Find("tools") != nullptr) {
    HARNESS_TRY(loop.tools, DecodeTools(object));
  }
  if (const Json* history = object.Find("history")) {
    // The transcript codec's own rules; its error names the path and the rule, never content.
    auto decoded = DecodeTranscriptValue(*history, object.MemberPath("history"));
    if (!decoded.ok())
      return Fail(Error(ApiErrorKind::kInvalidRequest, decoded.error().Describe()));
    loop.history = std::move(decoded).value();
  }
  if (auto unknown = FromJsonStatus(object.RejectUnknown()); !unknown.ok())
    return Fail(std::move(unknown).error());
  return loop;
}

Result<std::uint64_t, ApiError> Sequence(std::string_view text, std::string_view what) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  // At most INT64_MAX: the largest sequence number a journal can store.
  if (text.empty() || ec != std::errc() || ptr != end || value == 0 ||
      value > static_cast<std::uint64_t>(INT64_MAX)) {
    return Fail(
        Error(ApiErrorKind::kInvalidQuery, std::string(what) + " " + QuoteForDetail(text) +
                                               " is not a sequence number (an integer from 1)"));
  }
  return value;
}

// Each parameter once, and only the known ones.
Status<ApiError> CheckNames(const QueryParameters& query,
                            std::initializer_list<std::string_view> known) {
  for (std::size_t i = 0; i < query.size(); ++i) {
    const std::string& name = query[i].first;
    bool ok = false;
    for (std::string_view k : known)
      ok = ok || k == name;
    if (!ok) {
      return Fail(
          Error(ApiErrorKind::kInvalidQuery, "unknown query parameter " + QuoteForDetail(name)));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (query[j].first == name) {
        return Fail(Error(ApiErrorKind::kInvalidQuery,
                          "query parameter " + QuoteForDetail(name) + " given twice"));
      }
    }
  }
  return {};
}

}  // namespace

std::string_view ApiErrorKindName(ApiErrorKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  return i < kKinds.size() ? kKinds[i].name : "internal";
}

unsigned HttpStatusOf(ApiErrorKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  return i < kKinds.size() ? kKinds[i].status : 500;
}

std::string EncodeApiError(const ApiError& error) {
  std::string out;
  WireWriter top(out);
  top.Key("error");
  WireWriter e(out);
  e.String("kind", ApiErrorKindName(error.kind)).String("detail", error.detail);
  if (!error.reason.empty()) {
    e.String("reason", error.reason);
    if (!error.reason_detail.empty())
      e.String("reason_detail", error.reason_detail);
  }
  if (error.holder) {
    e.Key("holder");
    WireWriter holder(out);
    holder.Id("owner", error.holder->owner)
        .Int("lease_expires_at_ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                                        error.holder->expires_at.time_since_epoch())
                                        .count());
    if (!error.holder->url.empty())
      holder.String("url", error.holder->url);
    holder.Close();
  }
  e.Close();
  top.Close();
  return out;
}

std::span<const RouteSpec> Routes() {
  return kRoutes;
}

Result<Route, ApiError> MatchRoute(std::string_view method, std::string_view path) {
  Route route;
  if (const EmbeddedFile* asset = FindAsset(path); asset != nullptr) {
    route.asset = asset;
    route.allowed = "GET, HEAD";
    if (method == "GET" || method == "HEAD")
      route.kind = RouteKind::kAsset;
    else if (method == "OPTIONS")
      route.kind = RouteKind::kPreflight;
    else
      return Fail(Error(ApiErrorKind::kMethodNotAllowed, "this path takes GET and HEAD"));
    return route;
  }
  const std::vector<std::string_view> segments = Segments(path);
  // The routes whose path fits, in table order; the ids come from the first (every route of one
  // path has the same placeholders), so a malformed id is refused whatever the method.
  const RouteSpec* first = nullptr;
  std::string allowed;
  for (const RouteSpec& spec : Routes()) {
    if (!Fits(segments, Segments(spec.path)))
      continue;
    if (first == nullptr)
      first = &spec;
    if (!allowed.empty())
      allowed += ", ";
    allowed += spec.method;
  }
  if (first == nullptr) {
    // No route fits; a path that follows one up to an id segment that is no id (a decoded "/"
    // in it, "..", an empty segment) is told so, which says more than "no route".
    for (const RouteSpec& spec : Routes()) {
      const std::vector<std::string_view> pattern = Segments(spec.path);
      for (std::size_t i = 0; i < pattern.size() && i < segments.size(); ++i) {
        const bool placeholder = !pattern[i].empty() && pattern[i].front() == '{';
        if (!placeholder && pattern[i] != segments[i])
          break;
        if (placeholder && !IdSegment(segments[i], "").ok()) {
          const std::string_view what = pattern[i].substr(1, pattern[i].size() - 2);
          return Fail(IdSegment(segments[i], what).error());
        }
      }
    }
    return Fail(NoRoute());
  }
  const std::vector<std::string_view> pattern = Segments(first->path);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == "{session}") {
      HARNESS_TRY(route.session, IdSegment(segments[i], "session"));
    } else if (pattern[i] == "{loop}") {
      HARNESS_TRY(route.loop, IdSegment(segments[i], "loop"));
    } else if (pattern[i] == "{command}") {
      HARNESS_TRY(route.command, IdSegment(segments[i], "command"));
    } else if (pattern[i] == "{message}") {
      HARNESS_TRY(route.item, IdSegment(segments[i], "message"));
    } else if (pattern[i] == "{attempt}") {
      HARNESS_TRY(route.item, IdSegment(segments[i], "attempt"));
    } else if (pattern[i] == "{input}") {
      HARNESS_TRY(route.item, IdSegment(segments[i], "input"));
    } else if (pattern[i] == "{request}") {
      HARNESS_TRY(route.item, IdSegment(segments[i], "request"));
    }
  }
  // A preflight names the method it asks about; the server answers it only for an allowed
  // origin (docs/serve.md "CORS").
  if (method == "OPTIONS") {
    route.kind = RouteKind::kPreflight;
    route.allowed = allowed;
    return route;
  }
  for (const RouteSpec& spec : Routes()) {
    if (spec.method == method && spec.path == first->path) {
      route.kind = spec.kind;
      return route;
    }
  }
  return Fail(Error(ApiErrorKind::kMethodNotAllowed, "this path takes " + allowed));
}

bool IsOrigin(std::string_view origin) {
  std::string_view rest;
  if (origin.starts_with("http://"))
    rest = origin.substr(7);
  else if (origin.starts_with("https://"))
    rest = origin.substr(8);
  else
    return false;
  std::string_view host = rest;
  std::string_view port;
  if (rest.starts_with("[")) {
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos || close == 1)
      return false;
    host = rest.substr(1, close - 1);
    for (char c : host) {
      if (!(Digit(c) || (c >= 'a' && c <= 'f') || c == ':' || c == '.'))
        return false;
    }
    rest = rest.substr(close + 1);
    if (!rest.empty() && rest.front() != ':')
      return false;
    port = rest.empty() ? rest : rest.substr(1);
    if (rest.size() == 1)
      return false;
  } else {
    const std::size_t colon = rest.find(':');
    host = rest.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = rest.substr(colon + 1);
      if (port.empty())
        return false;
    }
    if (host.empty() || host.front() == '.' || host.front() == '-')
      return false;
    for (char c : host) {
      if (!(Digit(c) || (c >= 'a' && c <= 'z') || c == '.' || c == '-'))
        return false;
    }
  }
  if (port.size() > 5)
    return false;
  unsigned number = 0;
  for (char c : port) {
    if (!Digit(c))
      return false;
    number = number * 10 + static_cast<unsigned>(c - '0');
  }
  return port.empty() || (number >= 1 && number <= 65535);
}

Result<CreateSessionRequest, ApiError> DecodeCreateSession(std::string_view body) {
  HARNESS_TRY(Json root, ParseBody(body));
  HARNESS_TRY(JsonObject object, FromJsonResult(JsonObject::Open(root, "$")));
  HARNESS_TRY(const Json* loops, FromJsonResult(object.RequireNonNull("loops")));
  if (!loops->is_array()) {
    return Fail(Error(ApiErrorKind::kInvalidRequest,
                      "$.loops: expected an array, got " + std::string(JsonTypeName(*loops))));
  }
  if (loops->empty() || loops->size() > kMaxLoopsPerSession) {
    return Fail(Error(ApiErrorKind::kInvalidRequest,
                      "$.loops: from 1 to " + std::to_string(kMaxLoopsPerSession) + " loops"));
  }
  CreateSessionRequest request;
  for (std::size_t i = 0; i < loops->size(); ++i) {
    HARNESS_TRY(LoopRequest loop, DecodeLoop((*loops)[i], object.ElementPath("loops", i)));
    request.loops.push_back(std::move(loop));
  }
  if (auto unknown = FromJsonStatus(object.RejectUnknown()); !unknown.ok())
    return Fail(std::move(unknown).error());
  return request;
}

Result<InputRequest, ApiError> DecodeInput(std::string_view body) {
  HARNESS_TRY(Json root, ParseBody(body));
  HARNESS_TRY(JsonObject object, FromJsonResult(JsonObject::Open(root, "$")));
  InputRequest request;
  HARNESS_TRY(request.text, RequireText(object, "text"));
  if (request.text.empty())
    return Fail(Error(ApiErrorKind::kInvalidRequest, "$.text: empty"));
  if (object.Find("origin") != nullptr) {
    HARNESS_TRY(const std::string origin, RequireText(object, "origin"));
    constexpr InputOrigin kOrigins[] = {InputOrigin::kDirect, InputOrigin::kDelegateRequest,
                                        InputOrigin::kSubagentResult};
    bool known = false;
    for (InputOrigin candidate : kOrigins) {
      if (InputOriginName(candidate) == origin) {
        request.origin = candidate;
        known = true;
      }
    }
    if (!known) {
      return Fail(Error(ApiErrorKind::kInvalidRequest,
                        "$.origin: " + QuoteForDetail(origin, 32) +
                            " is not \"direct\", \"delegate_request\" or \"subagent_result\""));
    }
  }
  if (auto unknown = FromJsonStatus(object.RejectUnknown()); !unknown.ok())
    return Fail(std::move(unknown).error());
  return request;
}

Result<std::vector<ToolResultRequest>, ApiError> DecodeToolResults(std::string_view body) {
  HARNESS_TRY(Json root, ParseBody(body));
  HARNESS_TRY(JsonObject object, FromJsonResult(JsonObject::Open(root, "$")));
  HARNESS_TRY(const Json* results, BoundedArray(object, "results", kMaxToolResults, true));
  std::vector<ToolResultRequest> out;
  for (std::size_t i = 0; i < results->size(); ++i) {
    HARNESS_TRY(JsonObject r,
                FromJsonResult(JsonObject::Open((*results)[i], object.ElementPath("results", i))));
    ToolResultRequest result;
    HARNESS_TRY(result.tool_use_id, RequireText(r, "tool_use_id"));
    if (result.tool_use_id.empty() || result.tool_use_id.size() > kMaxToolUseIdBytes) {
      return Fail(Invalid(r.MemberPath("tool_use_id") + ": from 1 to " +
                          std::to_string(kMaxToolUseIdBytes) + " bytes"));
    }
    for (const ToolResultRequest& earlier : out) {
      if (earlier.tool_use_id == result.tool_use_id) {
        return Fail(Invalid(r.MemberPath("tool_use_id") + ": " +
                            QuoteForDetail(result.tool_use_id, 32) +
                            " is answered by an earlier result of this request too"));
      }
    }
    HARNESS_TRY(result.content, RequireText(r, "content"));
    if (const Json* is_error = r.Find("is_error")) {
      HARNESS_TRY(result.is_error, FromJsonResult(JsonAsBool(*is_error, r.MemberPath("is_error"))));
    }
    HARNESS_CHECK(RejectUnknown(r));
    out.push_back(std::move(result));
  }
  HARNESS_CHECK(RejectUnknown(object));
  return out;
}

Status<ApiError> DecodeEmptyObject(std::string_view body) {
  HARNESS_TRY(Json root, ParseBody(body));
  HARNESS_TRY(JsonObject object, FromJsonResult(JsonObject::Open(root, "$")));
  return FromJsonStatus(object.RejectUnknown());
}

Result<CompactRequest, ApiError> DecodeCompact(std::string_view body) {
  HARNESS_TRY(Json root, ParseBody(body));
  HARNESS_TRY(JsonObject object, FromJsonResult(JsonObject::Open(root, "$")));
  CompactRequest request;
  if (object.Find("instructions") != nullptr) {
    HARNESS_TRY(request.instructions, RequireText(object, "instructions"));
  }
  if (object.Find("preview") != nullptr) {
    HARNESS_TRY(request.preview, FromJsonResult(object.RequireBool("preview")));
  }
  if (auto unknown = FromJsonStatus(object.RejectUnknown()); !unknown.ok())
    return Fail(std::move(unknown).error());
  return request;
}

std::string_view CompactFormatName(const std::optional<Dialect>& dialect) {
  if (!dialect)
    return "harness";
  switch (*dialect) {
    case Dialect::kOpenAiChat:
      return "openai";
    case Dialect::kOpenAiResponses:
      return "openai-responses";
    case Dialect::kAnthropicMessages:
      return "anthropic";
  }
  return "harness";
}

namespace {

Result<std::optional<std::uint64_t>, ApiError> OptionalCount(JsonObject& object,
                                                             std::string_view name,
                                                             std::uint64_t max) {
  const Json* value = object.Find(name);
  if (value == nullptr)
    return std::optional<std::uint64_t>();
  HARNESS_TRY(std::uint64_t count,
              FromJsonResult(JsonAsUint(*value, object.MemberPath(name), max)));
  return std::optional(count);
}

Status<ApiError> DecodeCompactOptions(JsonObject& options, ConversationCompactRequest& request) {
  HARNESS_TRY(auto model, OptionalText(options, "model"));
  if (model) {
    if (model->empty())
      return Fail(Invalid(options.MemberPath("model") + ": empty (a configured model's name)"));
    request.model = *model;
  }
  HARNESS_TRY(request.compactor, OptionalCompactor(options, "compactor"));
  HARNESS_TRY(request.context_window, OptionalCount(options, "context_window", kMaxCompactWindow));
  HARNESS_TRY(request.max_output_tokens,
              OptionalCount(options, "max_output_tokens", kMaxCompactWindow));
  HARNESS_TRY(request.keep_recent_segments,
              OptionalCount(options, "keep_recent_segments", kMaxKeepRecentSegments));
  HARNESS_TRY(request.keep_recent_tokens,
              OptionalCount(options, "keep_recent_tokens", kMaxKeepRecentTokens));
  HARNESS_TRY(request.max_summary_tokens,
              OptionalCount(options, "max_summary_tokens", kMaxCompactWindow));
  HARNESS_TRY(auto instructions, OptionalText(options, "instructions"));
  request.instructions = instructions.value_or("");
  HARNESS_TRY(request.coverage, OptionalCoverage(options));
  if (options.Find("pins") != nullptr) {
    HARNESS_TRY(const Json* pins, BoundedArray(options, "pins", kMaxCompactPins, false));
    for (std::size_t i = 0; i < pins->size(); ++i) {
      HARNESS_TRY(std::uint64_t pin,
                  FromJsonResult(JsonAsUint((*pins)[i], options.ElementPath("pins", i),
                                            DialectLimits{}.max_elements)));
      if (std::find(request.pins.begin(), request.pins.end(), pin) != request.pins.end())
        return Fail(Invalid(options.ElementPath("pins", i) + ": pinned twice"));
      request.pins.push_back(static_cast<std::size_t>(pin));
    }
  }
  return RejectUnknown(options);
}

}  // namespace

Result<ConversationCompactRequest, ApiError> DecodeConversationCompact(std::string_view body) {
  // The conversation may nest as deep as a transcript allows, deeper than other bodies.
  JsonLimits limits;
  limits.max_depth = DialectLimits{}.max_depth;
  limits.max_bytes = std::max<std::size_t>(body.size(), 1);
  auto parsed = ParseStrictJson(body, limits);
  if (!parsed.ok())
    return Fail(FromJson(parsed.error()));
  HARNESS_TRY(JsonObject object, FromJsonResult(JsonObject::Open(*parsed, "$")));
  ConversationCompactRequest request;
  HARNESS_TRY(std::string format, RequireText(object, "format"));
  if (format == "openai") {
    request.dialect = Dialect::kOpenAiChat;
  } else if (format == "openai-responses") {
    request.dialect = Dialect::kOpenAiResponses;
  } else if (format == "anthropic") {
    request.dialect = Dialect::kAnthropicMessages;
  } else if (format != "harness") {
    return Fail(Invalid("$.format: " + QuoteForDetail(format, 32) +
                        " is not \"harness\", \"openai\", \"openai-responses\" or "
                        "\"anthropic\""));
  }
  // The dialect's reader reads its members from the body itself (their bytes are kept); they
  // are marked known here, and what the reader refuses names the body's path.
  const std::string_view conversation =
      request.dialect == Dialect::kOpenAiResponses ? "input" : "messages";
  HARNESS_TRY(const Json* messages, FromJsonResult(object.RequireNonNull(conversation)));
  if (request.dialect == Dialect::kAnthropicMessages)
    (void)object.Find("system");
  if (!request.dialect) {
    auto decoded = DecodeTranscriptValue(*messages, object.MemberPath("messages"));
    if (!decoded.ok())
      return Fail(Invalid(decoded.error().Describe()));
    request.messages = std::move(decoded).value();
  }
  if (const Json* options = object.Find("options")) {
    HARNESS_TRY(JsonObject o, FromJsonResult(JsonObject::Open(*options, "$.options")));
    HARNESS_CHECK(DecodeCompactOptions(o, request));
  }
  if (object.Find("store") != nullptr) {
    HARNESS_TRY(request.store, FromJsonResult(object.RequireBool("store")));
  }
  HARNESS_CHECK(RejectUnknown(object));
  if (request.dialect) {
    auto read = ReadDialect(*request.dialect, body);
    if (!read.ok()) {
      return Fail(Error(read.error().kind == DialectErrorKind::kLimit
                            ? ApiErrorKind::kTooLarge
                            : ApiErrorKind::kInvalidRequest,
                        read.error().Describe()));
    }
    request.conversation = std::move(read).value();
  }
  return request;
}

Result<EventsRequest, ApiError> DecodeEventsRequest(const QueryParameters& query,
                                                    std::optional<std::string_view> last_event_id) {
  if (auto names = CheckNames(query, {"from", "loop", "kind", "text_deltas"}); !names.ok())
    return Fail(std::move(names).error());
  EventsRequest request;
  for (const auto& [name, value] : query) {
    if (name == "text_deltas") {
      if (value != "true" && value != "false") {
        return Fail(Error(ApiErrorKind::kInvalidQuery,
                          "text_deltas " + QuoteForDetail(value, 32) + " is not true or false"));
      }
      request.text_deltas = value == "true";
    } else if (name == "from") {
      HARNESS_TRY(request.from, Sequence(value, "from"));
    } else if (name == "loop") {
      auto loop = Uuid::ParseCanonical(value);
      if (!loop.ok()) {
        return Fail(Error(ApiErrorKind::kInvalidQuery,
                          "loop " + QuoteForDetail(value) + " is not a canonical lowercase UUID"));
      }
      request.loop = *loop;
    } else {
      std::vector<EventKind> kinds;
      std::size_t at = 0;
      for (;;) {
        const std::size_t comma = value.find(',', at);
        const std::string_view name_text =
            std::string_view(value).substr(at, comma == std::string::npos ? comma : comma - at);
        const auto kind = EventKindFromName(name_text);
        if (!kind) {
          return Fail(Error(ApiErrorKind::kInvalidQuery,
                            "kind " + QuoteForDetail(name_text, 32) + " is not an event type"));
        }
        kinds.push_back(*kind);
        if (comma == std::string::npos)
          break;
        at = comma + 1;
      }
      request.kinds = std::move(kinds);
    }
  }
  if (last_event_id) {
    HARNESS_TRY(const std::uint64_t last, Sequence(*last_event_id, "Last-Event-ID"));
    if (last == static_cast<std::uint64_t>(INT64_MAX))
      return Fail(Error(ApiErrorKind::kInvalidQuery, "Last-Event-ID is the largest sequence"));
    request.from = last + 1;
  }
  return request;
}

Result<std::chrono::milliseconds, ApiError> DecodeWaitRequest(const QueryParameters& query) {
  if (auto names = CheckNames(query, {"wait_ms"}); !names.ok())
    return Fail(std::move(names).error());
  if (query.empty())
    return std::chrono::milliseconds(0);
  const std::string& text = query.front().second;
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end ||
      value > static_cast<std::uint64_t>(kMaxWait.count())) {
    return Fail(Error(ApiErrorKind::kInvalidQuery, "wait_ms " + QuoteForDetail(text) +
                                                       " is not an integer from 0 to " +
                                                       std::to_string(kMaxWait.count())));
  }
  return std::chrono::milliseconds(value);
}

Status<ApiError> RefuseQuery(const QueryParameters& query) {
  return CheckNames(query, {});
}

std::string CompactorName(const CompactorChoice& choice) {
  return choice.offline ? std::string("offline") : "model:" + choice.model;
}

Result<CompactorChoice, std::string> ParseCompactorName(std::string_view name) {
  constexpr std::string_view kModel = "model:";
  if (name.empty() || name == "offline")
    return CompactorChoice{};
  if (name.size() > kModel.size() && name.substr(0, kModel.size()) == kModel)
    return CompactorChoice{false, std::string(name.substr(kModel.size()))};
  return Fail("records the compactor " + QuoteForDetail(name, 64) +
              ", which is neither \"offline\" nor \"model:NAME\"");
}

}  // namespace harness::serve

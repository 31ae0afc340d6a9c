#include "serve/api.h"

#include <array>
#include <charconv>

#include "harness/core/json.h"

namespace harness::serve {

namespace {

struct KindInfo {
  std::string_view name;
  unsigned status;
};

constexpr std::array<KindInfo, 23> kKinds = {{
    {"invalid_json", 400},    {"invalid_request", 400},   {"invalid_query", 400},
    {"invalid_id", 400},      {"unknown_model", 400},     {"invalid_argument", 400},
    {"unauthorized", 401},    {"not_found", 404},         {"session_not_found", 404},
    {"loop_not_found", 404},  {"command_not_found", 404}, {"method_not_allowed", 405},
    {"lease_held", 409},      {"loop_exited", 409},       {"compaction_unsupported", 409},
    {"session_faulted", 409}, {"session_suspended", 409}, {"restore_refused", 409},
    {"too_large", 413},       {"journal", 500},           {"internal", 500},
    {"shutting_down", 503},   {"too_many_sessions", 503},
}};

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
  return *id;
}

struct MethodRoute {
  std::string_view method;
  RouteKind kind;
};

Result<Route, ApiError> Pick(std::string_view method, std::initializer_list<MethodRoute> routes,
                             Route route) {
  std::string allowed;
  for (const MethodRoute& r : routes) {
    if (r.method == method) {
      route.kind = r.kind;
      return route;
    }
    if (!allowed.empty())
      allowed += ", ";
    allowed += r.method;
  }
  return Fail(Error(ApiErrorKind::kMethodNotAllowed, "this path takes " + allowed));
}

ApiError NoRoute() {
  return Error(ApiErrorKind::kNotFound, "no such resource; every route is under /v1");
}

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

Result<LoopRequest, ApiError> DecodeLoop(const Json& value, std::string path) {
  HARNESS_TRY(JsonObject object, FromJsonResult(JsonObject::Open(value, std::move(path))));
  LoopRequest loop;
  HARNESS_TRY(loop.model, RequireText(object, "model"));
  if (loop.model.empty())
    return Fail(Error(ApiErrorKind::kInvalidRequest, object.MemberPath("model") + ": empty"));
  HARNESS_TRY(auto compactor, OptionalText(object, "compactor"));
  if (compactor && *compactor != "offline") {
    if (compactor->empty()) {
      return Fail(Error(ApiErrorKind::kInvalidRequest,
                        object.MemberPath("compactor") + ": empty (\"offline\" or a model name)"));
    }
    loop.compactor = CompactorChoice{false, *compactor};
  }
  HARNESS_TRY(auto system, OptionalText(object, "system_prompt"));
  loop.system_prompt = system.value_or("");
  if (const Json* policy = object.Find("policy")) {
    HARNESS_TRY(JsonObject p,
                FromJsonResult(JsonObject::Open(*policy, object.MemberPath("policy"))));
    if (const Json* automatic = p.Find("automatic")) {
      HARNESS_TRY(loop.automatic_compaction,
                  FromJsonResult(JsonAsBool(*automatic, p.MemberPath("automatic"))));
    }
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
    if (auto unknown = FromJsonStatus(p.RejectUnknown()); !unknown.ok())
      return Fail(std::move(unknown).error());
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
  std::string out = "{\"error\":{\"kind\":\"";
  out += ApiErrorKindName(error.kind);
  out += "\",\"detail\":";
  AppendJsonString(out, error.detail);
  if (error.holder) {
    out += ",\"holder\":{\"owner\":\"" + error.holder->owner.ToString() +
           "\",\"lease_expires_at_ms\":" +
           std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                              error.holder->expires_at.time_since_epoch())
                              .count()) +
           "}";
  }
  out += "}}";
  return out;
}

Result<Route, ApiError> MatchRoute(std::string_view method, std::string_view path) {
  const std::vector<std::string_view> s = Segments(path);
  if (s.size() < 2 || s[0] != "v1")
    return Fail(NoRoute());
  Route route;
  if (s[1] == "commands") {
    if (s.size() != 3)
      return Fail(NoRoute());
    HARNESS_TRY(route.command, IdSegment(s[2], "command"));
    return Pick(method, {{"GET", RouteKind::kGetCommand}}, route);
  }
  if (s[1] != "sessions")
    return Fail(NoRoute());
  if (s.size() == 2) {
    return Pick(method, {{"GET", RouteKind::kListSessions}, {"POST", RouteKind::kCreateSession}},
                route);
  }
  HARNESS_TRY(route.session, IdSegment(s[2], "session"));
  if (s.size() == 3) {
    return Pick(method, {{"GET", RouteKind::kGetSession}, {"DELETE", RouteKind::kDeleteSession}},
                route);
  }
  if (s.size() == 4 && s[3] == "export")
    return Pick(method, {{"GET", RouteKind::kExport}}, route);
  if (s.size() == 4 && s[3] == "events")
    return Pick(method, {{"GET", RouteKind::kEvents}}, route);
  if (s.size() != 6 || s[3] != "loops")
    return Fail(NoRoute());
  HARNESS_TRY(route.loop, IdSegment(s[4], "loop"));
  const std::string_view action = s[5];
  if (action == "input")
    return Pick(method, {{"POST", RouteKind::kInput}}, route);
  if (action == "compact")
    return Pick(method, {{"POST", RouteKind::kCompact}}, route);
  if (action == "interrupt")
    return Pick(method, {{"POST", RouteKind::kInterrupt}}, route);
  if (action == "history")
    return Pick(method, {{"GET", RouteKind::kHistory}}, route);
  if (action == "context")
    return Pick(method, {{"GET", RouteKind::kContext}}, route);
  return Fail(NoRoute());
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
  if (auto unknown = FromJsonStatus(object.RejectUnknown()); !unknown.ok())
    return Fail(std::move(unknown).error());
  return request;
}

Status<ApiError> DecodeEmptyObject(std::string_view body) {
  HARNESS_TRY(Json root, ParseBody(body));
  HARNESS_TRY(JsonObject object, FromJsonResult(JsonObject::Open(root, "$")));
  return FromJsonStatus(object.RejectUnknown());
}

Result<EventsRequest, ApiError> DecodeEventsRequest(const QueryParameters& query,
                                                    std::optional<std::string_view> last_event_id) {
  if (auto names = CheckNames(query, {"from", "loop", "kind"}); !names.ok())
    return Fail(std::move(names).error());
  EventsRequest request;
  for (const auto& [name, value] : query) {
    if (name == "from") {
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

}  // namespace harness::serve

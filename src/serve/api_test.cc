// The router and the request decoders of `harness serve` (serve/api.h), table by table.
#include "serve/api.h"

#include <gtest/gtest.h>

#include "harness/event/lifecycle.h"
#include "serve/static_assets.h"

namespace harness::serve {
namespace {

constexpr std::string_view kSession = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
constexpr std::string_view kLoop = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c";

std::string S(std::string_view tail) {
  return "/v1/sessions/" + std::string(kSession) + std::string(tail);
}

ApiErrorKind KindOf(const Result<Route, ApiError>& r) {
  return r.ok() ? ApiErrorKind::kInternal : r.error().kind;
}

// A body a decoder refuses: the kind, and what the detail says (the JSONPath, mostly).
struct Refusal {
  std::string body;
  ApiErrorKind kind;
  std::string in_detail;
};

template <class Decode, std::size_t N>
void ExpectRefusals(Decode decode, const Refusal (&cases)[N]) {
  for (const Refusal& c : cases) {
    auto decoded = decode(c.body);
    ASSERT_FALSE(decoded.ok()) << c.body;
    EXPECT_EQ(decoded.error().kind, c.kind) << c.body << ": " << decoded.error().detail;
    EXPECT_NE(decoded.error().detail.find(c.in_detail), std::string::npos)
        << c.body << ": " << decoded.error().detail;
  }
}

TEST(Router, EveryRouteMatchesItsMethodAndPath) {
  const std::string loop = "/loops/" + std::string(kLoop);
  const struct {
    std::string method, path;
    RouteKind kind;
  } cases[] = {
      {"POST", "/v1/sessions", RouteKind::kCreateSession},
      {"GET", "/v1/sessions", RouteKind::kListSessions},
      {"GET", S(""), RouteKind::kGetSession},
      {"DELETE", S(""), RouteKind::kDeleteSession},
      {"GET", S("/export"), RouteKind::kExport},
      {"GET", S("/events"), RouteKind::kEvents},
      {"POST", S(loop + "/input"), RouteKind::kInput},
      {"POST", S(loop + "/compact"), RouteKind::kCompact},
      {"POST", S(loop + "/interrupt"), RouteKind::kInterrupt},
      {"GET", S(loop + "/history"), RouteKind::kHistory},
      {"GET", S(loop + "/context"), RouteKind::kContext},
      {"GET", S(loop + "/tool_calls"), RouteKind::kToolCalls},
      {"POST", S(loop + "/tool_results"), RouteKind::kToolResults},
      {"POST", S(loop + "/undo"), RouteKind::kUndo},
      {"PUT", S(loop + "/pins/" + std::string(kLoop)), RouteKind::kPin},
      {"DELETE", S(loop + "/pins/" + std::string(kLoop)), RouteKind::kUnpin},
      {"POST", S(loop + "/proposals/" + std::string(kLoop) + "/approve"), RouteKind::kApprove},
      {"POST", S(loop + "/proposals/" + std::string(kLoop) + "/discard"), RouteKind::kDiscard},
      {"POST", S(loop + "/mask"), RouteKind::kMask},
      {"POST", S(loop + "/unmask"), RouteKind::kUnmaskAll},
      {"GET", S(loop + "/masked/" + std::string(kLoop)), RouteKind::kMaskedOriginal},
      {"DELETE", S(loop + "/masked/" + std::string(kLoop)), RouteKind::kUnmask},
      {"DELETE", S(loop + "/inputs/" + std::string(kLoop)), RouteKind::kCancelInput},
      {"DELETE", S(loop + "/delegate_requests/" + std::string(kLoop)), RouteKind::kCancelDelegate},
      {"GET", S("/commands/" + std::string(kLoop)), RouteKind::kGetSessionCommand},
      {"GET", "/v1/commands/" + std::string(kLoop), RouteKind::kGetCommand},
      {"GET", "/v1/openapi.json", RouteKind::kOpenApi},
      {"GET", "/metrics", RouteKind::kMetrics},
      {"POST", "/v1/compact", RouteKind::kCompactConversation},
      {"POST", "/v1/responses", RouteKind::kGatewayResponses},
      {"POST", "/v1/responses/compact", RouteKind::kGatewayResponsesCompact},
      {"POST", "/v1/messages", RouteKind::kGatewayMessages},
      {"POST", "/v1/chat/completions", RouteKind::kGatewayChatCompletions},
  };
  // The table above is the router's table, route for route.
  EXPECT_EQ(std::size(cases), Routes().size());
  for (const auto& c : cases) {
    auto route = MatchRoute(c.method, c.path);
    ASSERT_TRUE(route.ok()) << c.method << " " << c.path << ": " << route.error().detail;
    EXPECT_EQ(route->kind, c.kind) << c.path;
  }
  auto route = MatchRoute("POST", S(loop + "/compact"));
  ASSERT_TRUE(route.ok());
  EXPECT_EQ(route->session.ToString(), kSession);
  EXPECT_EQ(route->loop.ToString(), kLoop);
  // A session's command names both.
  auto command = MatchRoute("GET", S("/commands/" + std::string(kLoop)));
  ASSERT_TRUE(command.ok());
  EXPECT_EQ(command->session.ToString(), kSession);
  EXPECT_EQ(command->command.ToString(), kLoop);
}

TEST(Router, OptionsIsAPreflightNamingThePathsMethods) {
  auto route = MatchRoute("OPTIONS", S(""));
  ASSERT_TRUE(route.ok());
  EXPECT_EQ(route->kind, RouteKind::kPreflight);
  EXPECT_EQ(route->allowed, "GET, DELETE");
  route = MatchRoute("OPTIONS", "/v1/sessions");
  ASSERT_TRUE(route.ok());
  EXPECT_EQ(route->allowed, "POST, GET");
  // A preflight of no route, or with a bad id, is refused as any request is.
  EXPECT_EQ(KindOf(MatchRoute("OPTIONS", "/v1/nothing")), ApiErrorKind::kNotFound);
  EXPECT_EQ(KindOf(MatchRoute("OPTIONS", "/v1/sessions/x")), ApiErrorKind::kInvalidId);
}

TEST(Router, TheInspectorsFilesAreAssetsForGetAndHeadOnly) {
  for (const char* path : {"/", "/index.html", "/inspector.js", "/inspector.css"}) {
    auto route = MatchRoute("GET", path);
    ASSERT_TRUE(route.ok()) << path << ": " << route.error().detail;
    EXPECT_EQ(route->kind, RouteKind::kAsset) << path;
    ASSERT_NE(route->asset, nullptr) << path;
    EXPECT_FALSE(route->asset->body.empty()) << path;
    auto head = MatchRoute("HEAD", path);
    ASSERT_TRUE(head.ok()) << path;
    EXPECT_EQ(head->kind, RouteKind::kAsset) << path;
    EXPECT_EQ(head->asset, route->asset) << path;
    EXPECT_EQ(KindOf(MatchRoute("POST", path)), ApiErrorKind::kMethodNotAllowed) << path;
  }
  EXPECT_EQ(MatchRoute("GET", "/")->asset->name, "index.html");
  for (const char* path : {"/inspector.js/", "//inspector.js", "/inspector", "/v1/inspector.js",
                           "/INSPECTOR.JS", "/../inspector.js", "inspector.js"}) {
    EXPECT_EQ(KindOf(MatchRoute("GET", path)), ApiErrorKind::kNotFound) << path;
  }
}

TEST(Router, RefusesUnknownPathsMethodsAndIdsWithTheirKinds) {
  EXPECT_EQ(KindOf(MatchRoute("GET", "/nope.js")), ApiErrorKind::kNotFound);
  EXPECT_EQ(KindOf(MatchRoute("GET", "/v1")), ApiErrorKind::kNotFound);
  EXPECT_EQ(KindOf(MatchRoute("GET", "/v2/sessions")), ApiErrorKind::kNotFound);
  EXPECT_EQ(KindOf(MatchRoute("GET", "/v1/sessions/")), ApiErrorKind::kInvalidId);
  EXPECT_EQ(KindOf(MatchRoute("GET", "/v1/sessions//events")), ApiErrorKind::kInvalidId);
  // A path that follows a route up to a segment that is no id says so, whatever follows.
  EXPECT_EQ(KindOf(MatchRoute("GET", "/v1/sessions/../sessions")), ApiErrorKind::kInvalidId);
  EXPECT_EQ(KindOf(MatchRoute("GET", "/v1/sessions/../../etc")), ApiErrorKind::kInvalidId);
  EXPECT_EQ(KindOf(MatchRoute("GET", "/v1/commands/x/y")), ApiErrorKind::kInvalidId);
  EXPECT_EQ(KindOf(MatchRoute("GET", S("/events/"))), ApiErrorKind::kNotFound);
  EXPECT_EQ(KindOf(MatchRoute("GET", S("/loops/") + std::string(kLoop) + "/nope")),
            ApiErrorKind::kNotFound);
  EXPECT_EQ(KindOf(MatchRoute("PUT", "/v1/sessions")), ApiErrorKind::kMethodNotAllowed);
  EXPECT_EQ(KindOf(MatchRoute("GET", S("/loops/") + std::string(kLoop) + "/compact")),
            ApiErrorKind::kMethodNotAllowed);
  // Only canonical lowercase UUIDs name a resource.
  std::string upper(kSession);
  for (char& c : upper)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(KindOf(MatchRoute("GET", "/v1/sessions/" + upper)), ApiErrorKind::kInvalidId);
  EXPECT_EQ(KindOf(MatchRoute("GET", "/v1/sessions/x")), ApiErrorKind::kInvalidId);
  EXPECT_EQ(KindOf(MatchRoute("GET", "/v1/commands/x")), ApiErrorKind::kInvalidId);
  EXPECT_EQ(KindOf(MatchRoute("GET", S("/commands/x"))), ApiErrorKind::kInvalidId);
  EXPECT_EQ(KindOf(MatchRoute("POST", S("/commands/") + std::string(kLoop))),
            ApiErrorKind::kMethodNotAllowed);
  // The nil UUID is canonical but names nothing: no session, loop, command or message has it.
  const std::string nil = "00000000-0000-0000-0000-000000000000";
  for (const std::string& path : std::vector<std::string>{
           "/v1/sessions/" + nil, "/v1/commands/" + nil, S("/loops/") + nil + "/history",
           S("/commands/") + nil, S("/loops/") + std::string(kLoop) + "/pins/" + nil,
           "/v1/sessions/" + nil + "/nope"}) {
    auto route = MatchRoute(path.find("/pins/") != std::string::npos ? "PUT" : "GET", path);
    ASSERT_FALSE(route.ok()) << path;
    EXPECT_EQ(route.error().kind, ApiErrorKind::kInvalidId) << path;
    EXPECT_NE(route.error().detail.find("is the nil UUID"), std::string::npos)
        << route.error().detail;
  }
}

TEST(ApiErrors, EachKindHasItsNameAndStatus) {
  EXPECT_EQ(ApiErrorKindName(ApiErrorKind::kLoopNotFound), "loop_not_found");
  EXPECT_EQ(HttpStatusOf(ApiErrorKind::kInvalidJson), 400u);
  EXPECT_EQ(HttpStatusOf(ApiErrorKind::kUnauthorized), 401u);
  EXPECT_EQ(HttpStatusOf(ApiErrorKind::kSessionNotFound), 404u);
  EXPECT_EQ(HttpStatusOf(ApiErrorKind::kMethodNotAllowed), 405u);
  EXPECT_EQ(HttpStatusOf(ApiErrorKind::kLeaseHeld), 409u);
  EXPECT_EQ(HttpStatusOf(ApiErrorKind::kTooLarge), 413u);
  EXPECT_EQ(HttpStatusOf(ApiErrorKind::kShuttingDown), 503u);
  EXPECT_EQ(ApiErrorKindName(ApiErrorKind::kInvalidHeader), "invalid_header");
  EXPECT_EQ(HttpStatusOf(ApiErrorKind::kInvalidHeader), 400u);
  EXPECT_EQ(ApiErrorKindName(ApiErrorKind::kHostNotAllowed), "host_not_allowed");
  EXPECT_EQ(HttpStatusOf(ApiErrorKind::kHostNotAllowed), 421u);
  EXPECT_EQ(ApiErrorKindName(ApiErrorKind::kUnsupportedMediaType), "unsupported_media_type");
  EXPECT_EQ(HttpStatusOf(ApiErrorKind::kUnsupportedMediaType), 415u);
  EXPECT_EQ(ApiErrorKindName(ApiErrorKind::kTooManySessions), "too_many_sessions");
  EXPECT_EQ(ApiErrorKindName(ApiErrorKind::kToolCallNotFound), "tool_call_not_found");
  EXPECT_EQ(HttpStatusOf(ApiErrorKind::kToolCallNotFound), 404u);
  EXPECT_EQ(ApiErrorKindName(ApiErrorKind::kToolCallAnswered), "tool_call_answered");
  EXPECT_EQ(HttpStatusOf(ApiErrorKind::kToolCallAnswered), 409u);
  // Every kind has its own name: the table follows the enum.
  EXPECT_EQ(ApiErrorKindName(ApiErrorKind::kRestoreRefused), "restore_refused");
  EXPECT_EQ(ApiErrorKindName(ApiErrorKind::kMethodNotAllowed), "method_not_allowed");
  EXPECT_EQ(EncodeApiError({ApiErrorKind::kLoopNotFound, "no \"x\""}),
            R"({"error":{"kind":"loop_not_found","detail":"no \"x\""}})");
}

TEST(ApiErrors, ARejectedCompactionNamesItsReason) {
  EXPECT_EQ(HttpStatusOf(ApiErrorKind::kCompactionRejected), 422u);
  ApiError rejected{ApiErrorKind::kCompactionRejected, "rejected"};
  rejected.reason = "unavailable";
  EXPECT_EQ(
      EncodeApiError(rejected),
      R"({"error":{"kind":"compaction_rejected","detail":"rejected","reason":"unavailable"}})");
  rejected.reason_detail = "nothing_to_compact";
  EXPECT_EQ(EncodeApiError(rejected),
            R"({"error":{"kind":"compaction_rejected","detail":"rejected","reason":"unavailable",)"
            R"("reason_detail":"nothing_to_compact"}})");
}

TEST(ApiErrors, AHeldLeaseNamesItsHolder) {
  ApiError held{ApiErrorKind::kLeaseHeld, "held"};
  held.holder = ApiLeaseHolder{*Uuid::ParseCanonical("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"),
                               WallTime(std::chrono::milliseconds(1'700'000'000'123)), ""};
  EXPECT_EQ(EncodeApiError(held),
            R"({"error":{"kind":"lease_held","detail":"held","holder":{"owner":)"
            R"("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","lease_expires_at_ms":1700000000123}}})");
  // The holder's advertised URL follows, as a JSON string, when it has one.
  held.holder->url = "http://10.0.0.7:8420/a\"b";
  EXPECT_EQ(EncodeApiError(held),
            R"({"error":{"kind":"lease_held","detail":"held","holder":{"owner":)"
            R"("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","lease_expires_at_ms":1700000000123,)"
            R"("url":"http://10.0.0.7:8420/a\"b"}}})");
}

// A long autonomous turn may be given the library's whole step range: 100,000 model calls and
// kMaxStepsPerTurn are accepted as given (one past it is refused in RefusesWithTheKindAndPath).
TEST(DecodeCreateSession, TakesAStepLimitUpToTheLibrarysMaximum) {
  for (const std::uint64_t steps : {std::uint64_t{1}, std::uint64_t{100000}, kMaxStepsPerTurn}) {
    auto request = DecodeCreateSession(R"({"loops":[{"model":"m","policy":{"max_steps_per_turn":)" +
                                       std::to_string(steps) + "}}]}");
    ASSERT_TRUE(request.ok()) << steps << ": " << request.error().detail;
    EXPECT_EQ(request->loops[0].max_steps_per_turn, steps);
  }
}

TEST(DecodeCreateSession, ReadsEveryMemberAndTheDefaults) {
  auto full = DecodeCreateSession(
      R"({"loops":[{"model":"m","compactor":"c","system_prompt":"be brief",)"
      R"("policy":{"automatic":false,"keep_recent_segments":1,"keep_recent_tokens":500,)"
      R"("coverage":"repair","max_steps_per_turn":3}},)"
      R"({"model":"n","compactor":"offline"}]})");
  ASSERT_TRUE(full.ok()) << full.error().detail;
  ASSERT_EQ(full->loops.size(), 2u);
  EXPECT_EQ(full->loops[0].model, "m");
  EXPECT_FALSE(full->loops[0].compactor.offline);
  EXPECT_EQ(full->loops[0].compactor.model, "c");
  EXPECT_EQ(full->loops[0].system_prompt, "be brief");
  EXPECT_FALSE(full->loops[0].automatic_compaction);
  EXPECT_EQ(full->loops[0].keep_recent_segments, 1u);
  EXPECT_EQ(full->loops[0].keep_recent_tokens, 500u);
  EXPECT_EQ(full->loops[0].max_steps_per_turn, 3u);
  EXPECT_FALSE(full->loops[1].max_steps_per_turn);  // the runtime's default (Define)
  EXPECT_FALSE(full->loops[1].keep_recent_segments);
  EXPECT_TRUE(full->loops[1].compactor.offline);
  EXPECT_TRUE(full->loops[1].automatic_compaction);
  EXPECT_EQ(full->loops[1].system_prompt, "");
  EXPECT_EQ(full->loops[0].coverage, CoverageMode::kRepair);
  EXPECT_EQ(full->loops[1].coverage, std::nullopt);  // the compactor's default (Define)
  for (const auto& [text, mode] :
       {std::pair{"off", CoverageMode::kOff}, std::pair{"report", CoverageMode::kReport},
        std::pair{"enforce", CoverageMode::kEnforce}}) {
    auto one = DecodeCreateSession(std::string(R"({"loops":[{"model":"m","policy":{"coverage":")") +
                                   text + R"("}}]})");
    ASSERT_TRUE(one.ok()) << text;
    EXPECT_EQ(one->loops[0].coverage, mode) << text;
  }
}

TEST(DecodeCreateSession, ReadsAnInitialHistoryAndRefusesABadMessageByItsPath) {
  auto with = DecodeCreateSession(
      R"({"loops":[{"model":"m","history":[)"
      R"({"role":"user","blocks":[{"type":"text","text":"Fix the build."}]},)"
      R"({"role":"assistant","blocks":[{"type":"text","text":"Fixed."}],"usage":null}]}]})");
  ASSERT_TRUE(with.ok()) << with.error().detail;
  ASSERT_EQ(with->loops[0].history.size(), 2u);
  ASSERT_NE(with->loops[0].history[1].as<AssistantMessage>(), nullptr);
  EXPECT_TRUE(DecodeCreateSession(R"({"loops":[{"model":"m"}]})")->loops[0].history.empty());
  // The codec's rule: a transcript has messages (leave the member out for none).
  auto empty = DecodeCreateSession(R"({"loops":[{"model":"m","history":[]}]})");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().detail, "$.loops[0].history: transcript has no messages");
  auto bad =
      DecodeCreateSession(R"({"loops":[{"model":"m","history":[)"
                          R"({"role":"user","blocks":[{"type":"text","text":"Fix the build."}]},)"
                          R"({"role":"user","blocks":[{"type":"secret","text":"hunter2"}]}]}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ApiErrorKind::kInvalidRequest);
  EXPECT_EQ(bad.error().detail.rfind("$.loops[0].history[1].blocks[0]", 0), 0u)
      << bad.error().detail;
  EXPECT_EQ(bad.error().detail.find("hunter2"), std::string::npos);
  auto object = DecodeCreateSession(R"({"loops":[{"model":"m","history":{}}]})");
  ASSERT_FALSE(object.ok());
  EXPECT_EQ(object.error().kind, ApiErrorKind::kInvalidRequest);
}

TEST(DecodeCreateSession, RefusesWithTheKindAndPath) {
  const Refusal cases[] = {
      {"", ApiErrorKind::kInvalidRequest, "$.loops"},
      {"{", ApiErrorKind::kInvalidJson, ""},
      {R"({"loops":[],"loops":[]})", ApiErrorKind::kInvalidJson, ""},
      {"\xEF\xBB\xBF{}", ApiErrorKind::kInvalidJson, ""},
      {R"({"loops":[]})", ApiErrorKind::kInvalidRequest, "$.loops"},
      {R"({"loops":{}})", ApiErrorKind::kInvalidRequest, "$.loops"},
      {R"({"loops":[{}]})", ApiErrorKind::kInvalidRequest, "$.loops[0].model"},
      {R"({"loops":[{"model":""}]})", ApiErrorKind::kInvalidRequest, "$.loops[0].model"},
      {R"({"loops":[{"model":1}]})", ApiErrorKind::kInvalidRequest, "$.loops[0].model"},
      {R"({"loops":[{"model":"m","compactor":""}]})", ApiErrorKind::kInvalidRequest,
       "$.loops[0].compactor"},
      {R"({"loops":[{"model":"m","tools":{}}]})", ApiErrorKind::kInvalidRequest,
       "$.loops[0].tools: expected an array"},
      {R"({"loops":[{"model":"m","tools":[{}]}]})", ApiErrorKind::kInvalidRequest,
       "$.loops[0].tools[0].name"},
      {R"({"loops":[{"model":"m","tools":[{"name":""}]}]})", ApiErrorKind::kInvalidRequest,
       "$.loops[0].tools[0].name"},
      {R"({"loops":[{"model":"m","tools":[{"name":"a b"}]}]})", ApiErrorKind::kInvalidRequest,
       "$.loops[0].tools[0].name"},
      {R"({"loops":[{"model":"m","tools":[{"name":"a"},{"name":"a"}]}]})",
       ApiErrorKind::kInvalidRequest, "$.loops[0].tools[1].name"},
      {R"({"loops":[{"model":"m","tools":[{"name":"a","input_schema":"{}"}]}]})",
       ApiErrorKind::kInvalidRequest, "$.loops[0].tools[0].input_schema"},
      {R"({"loops":[{"model":"m","tools":[{"name":"a","description":7}]}]})",
       ApiErrorKind::kInvalidRequest, "$.loops[0].tools[0].description"},
      {R"({"loops":[{"model":"m","tools":[{"name":"a","run":"rm -rf /"}]}]})",
       ApiErrorKind::kInvalidRequest, "$.loops[0].tools[0]: unknown member \"run\""},
      {R"({"loops":[{"model":"m","policy":{"automatic":"yes"}}]})", ApiErrorKind::kInvalidRequest,
       "$.loops[0].policy.automatic"},
      {R"({"loops":[{"model":"m","policy":{"keep_recent_segments":-1}}]})",
       ApiErrorKind::kInvalidRequest, "$.loops[0].policy.keep_recent_segments"},
      {R"({"loops":[{"model":"m","policy":{"keep_recent_tokens":100000001}}]})",
       ApiErrorKind::kInvalidRequest, "$.loops[0].policy.keep_recent_tokens"},
      {R"({"loops":[{"model":"m","policy":{"max_steps_per_turn":0}}]})",
       ApiErrorKind::kInvalidRequest, "$.loops[0].policy.max_steps_per_turn must be at least 1"},
      {R"({"loops":[{"model":"m","policy":{"max_steps_per_turn":1000001}}]})",
       ApiErrorKind::kInvalidRequest, "$.loops[0].policy.max_steps_per_turn"},
      {R"({"loops":[{"model":"m","policy":{"max_steps_per_turn":2.5}}]})",
       ApiErrorKind::kInvalidRequest, "$.loops[0].policy.max_steps_per_turn"},
      {R"({"loops":[{"model":"m","policy":{"coverage":"strict"}}]})", ApiErrorKind::kInvalidRequest,
       "$.loops[0].policy.coverage must be \"off\", \"report\", \"repair\" or \"enforce\""},
      {R"({"loops":[{"model":"m","policy":{"coverage":4}}]})", ApiErrorKind::kInvalidRequest,
       "$.loops[0].policy.coverage"},
      {R"({"loops":[{"model":"m","policy":{"when":1}}]})", ApiErrorKind::kInvalidRequest,
       "unknown member \"when\""},
      {R"({"loops":[{"model":"m"}],"path":"/etc/passwd"})", ApiErrorKind::kInvalidRequest,
       "unknown member \"path\""},
      {R"({"loops":[{"model":"m","system_prompt":null}]})", ApiErrorKind::kInvalidRequest,
       "$.loops[0].system_prompt"},
      {std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']'),
       ApiErrorKind::kInvalidJson, ""},
  };
  ExpectRefusals(DecodeCreateSession, cases);
  std::string many = R"({"loops":[)";
  for (std::size_t i = 0; i <= kMaxLoopsPerSession; ++i)
    many += std::string(i == 0 ? "" : ",") + R"({"model":"m"})";
  EXPECT_EQ(DecodeCreateSession(many + "]}").error().kind, ApiErrorKind::kInvalidRequest);
}

TEST(DecodeCreateSession, ReadsClientToolsWithinTheirBounds) {
  auto decoded = DecodeCreateSession(
      R"({"loops":[{"model":"m","tools":[{"name":"get_weather-2","description":"the weather",)"
      R"("input_schema":{"type":"object","properties":{"city":{"type":"string"}}}},)"
      R"({"name":"now"}]}]})");
  ASSERT_TRUE(decoded.ok()) << decoded.error().detail;
  const auto& tools = decoded->loops[0].tools;
  ASSERT_EQ(tools.size(), 2u);
  EXPECT_EQ(tools[0].name, "get_weather-2");
  EXPECT_EQ(tools[0].description, "the weather");
  EXPECT_EQ(tools[0].input_schema, R"({"type":"object","properties":{"city":{"type":"string"}}})");
  EXPECT_EQ(tools[1].description, "");
  EXPECT_EQ(tools[1].input_schema, R"({"type":"object"})");
  EXPECT_TRUE(
      DecodeCreateSession(R"({"loops":[{"model":"m","tools":[]}]})")->loops[0].tools.empty());

  const auto with_tools = [](std::size_t count, std::string_view tool_json) {
    std::string body = R"({"loops":[{"model":"m","tools":[)";
    for (std::size_t i = 0; i < count; ++i) {
      std::string tool(tool_json);
      tool.replace(tool.find("NAME"), 4, "t" + std::to_string(i));
      body += (i == 0 ? "" : ",") + tool;
    }
    return body + "]}]}";
  };
  EXPECT_TRUE(DecodeCreateSession(with_tools(kMaxLoopTools, R"({"name":"NAME"})")).ok());
  EXPECT_EQ(DecodeCreateSession(with_tools(kMaxLoopTools + 1, R"({"name":"NAME"})")).error().kind,
            ApiErrorKind::kInvalidRequest);
  const std::string name64(kMaxToolNameBytes, 'n');
  EXPECT_TRUE(
      DecodeCreateSession(R"({"loops":[{"model":"m","tools":[{"name":")" + name64 + R"("}]}]})")
          .ok());
  EXPECT_EQ(
      DecodeCreateSession(R"({"loops":[{"model":"m","tools":[{"name":")" + name64 + R"(n"}]}]})")
          .error()
          .kind,
      ApiErrorKind::kInvalidRequest);
  const std::string long_text(kMaxToolDescriptionBytes + 1, 'd');
  auto long_description =
      DecodeCreateSession(with_tools(1, R"({"name":"NAME","description":")" + long_text + R"("})"));
  EXPECT_NE(long_description.error().detail.find("$.loops[0].tools[0].description"),
            std::string::npos);
  auto long_schema =
      DecodeCreateSession(with_tools(1, R"({"name":"NAME","input_schema":{"description":")" +
                                            std::string(kMaxToolSchemaBytes, 's') + R"("}})"));
  EXPECT_NE(long_schema.error().detail.find("$.loops[0].tools[0].input_schema: over"),
            std::string::npos);
}

TEST(DecodeToolResults, ReadsEachResultAndRefusesWithThePath) {
  auto decoded = DecodeToolResults(R"({"results":[{"tool_use_id":"call_1","content":"12 C"},)"
                                   R"({"tool_use_id":"call_2","content":"","is_error":true}]})");
  ASSERT_TRUE(decoded.ok()) << decoded.error().detail;
  ASSERT_EQ(decoded->size(), 2u);
  EXPECT_EQ((*decoded)[0].tool_use_id, "call_1");
  EXPECT_EQ((*decoded)[0].content, "12 C");
  EXPECT_FALSE((*decoded)[0].is_error);
  EXPECT_EQ((*decoded)[1].content, "");
  EXPECT_TRUE((*decoded)[1].is_error);
  const Refusal cases[] = {
      {"", ApiErrorKind::kInvalidRequest, "$.results"},
      {R"({"results":[]})", ApiErrorKind::kInvalidRequest, "$.results: from 1"},
      {R"({"results":{}})", ApiErrorKind::kInvalidRequest, "$.results: expected an array"},
      {R"({"results":[{"content":"x"}]})", ApiErrorKind::kInvalidRequest,
       "$.results[0].tool_use_id"},
      {R"({"results":[{"tool_use_id":"","content":"x"}]})", ApiErrorKind::kInvalidRequest,
       "$.results[0].tool_use_id"},
      {R"({"results":[{"tool_use_id":"a"}]})", ApiErrorKind::kInvalidRequest,
       "$.results[0].content"},
      {R"({"results":[{"tool_use_id":"a","content":"x","is_error":"no"}]})",
       ApiErrorKind::kInvalidRequest, "$.results[0].is_error"},
      {R"({"results":[{"tool_use_id":"a","content":"x"},{"tool_use_id":"a","content":"y"}]})",
       ApiErrorKind::kInvalidRequest, "$.results[1].tool_use_id"},
      {R"({"results":[{"tool_use_id":"a","content":"x","images":[]}]})",
       ApiErrorKind::kInvalidRequest, "$.results[0]: unknown member \"images\""},
      {R"({"results":[{"tool_use_id":"a","content":"x"}],"wait":true})",
       ApiErrorKind::kInvalidRequest, "unknown member \"wait\""},
      {R"({"results":[{"tool_use_id":"a","content":"\ud800"}]})", ApiErrorKind::kInvalidJson, ""},
  };
  ExpectRefusals(DecodeToolResults, cases);
  std::string many = R"({"results":[)";
  for (std::size_t i = 0; i <= kMaxToolResults; ++i)
    many += std::string(i == 0 ? "" : ",") + R"({"tool_use_id":"c)" + std::to_string(i) +
            R"(","content":""})";
  EXPECT_EQ(DecodeToolResults(many + "]}").error().kind, ApiErrorKind::kInvalidRequest);
  EXPECT_EQ(DecodeToolResults(R"({"results":[{"tool_use_id":")" +
                              std::string(kMaxToolUseIdBytes + 1, 'i') + R"(","content":""}]})")
                .error()
                .kind,
            ApiErrorKind::kInvalidRequest);
}

TEST(DecodeConversationCompact, ReadsEveryOptionAndTheFormatsConversation) {
  auto request = DecodeConversationCompact(
      R"({"format":"openai-responses","store":true,"input":[{"role":"user","content":"hi"}],)"
      R"("options":{"model":"m","compactor":"c","context_window":5000,"max_output_tokens":100,)"
      R"("keep_recent_segments":2,"keep_recent_tokens":300,"max_summary_tokens":400,)"
      R"("instructions":"keep the plan","coverage":"enforce","pins":[0]}})");
  ASSERT_TRUE(request.ok()) << request.error().detail;
  EXPECT_EQ(request->dialect, Dialect::kOpenAiResponses);
  EXPECT_EQ(request->conversation.elements.size(), 1u);
  EXPECT_EQ(request->conversation.elements[0].json, R"({"role":"user","content":"hi"})");
  EXPECT_TRUE(request->store);
  EXPECT_EQ(request->model, "m");
  EXPECT_EQ(request->compactor, (CompactorChoice{false, "c"}));
  EXPECT_EQ(request->context_window, 5000u);
  EXPECT_EQ(request->max_output_tokens, 100u);
  EXPECT_EQ(request->keep_recent_segments, 2u);
  EXPECT_EQ(request->keep_recent_tokens, 300u);
  EXPECT_EQ(request->max_summary_tokens, 400u);
  EXPECT_EQ(request->instructions, "keep the plan");
  EXPECT_EQ(request->coverage, CoverageMode::kEnforce);
  EXPECT_EQ(request->pins, std::vector<std::size_t>{0});
  // The defaults: the offline model and compactor, nothing stored.
  request = DecodeConversationCompact(
      R"({"format":"harness","messages":[{"role":"user","blocks":[{"type":"text","text":"hi"}]}]})");
  ASSERT_TRUE(request.ok()) << request.error().detail;
  EXPECT_FALSE(request->dialect);
  EXPECT_EQ(request->model, "offline");
  EXPECT_TRUE(request->compactor.offline);
  EXPECT_FALSE(request->store);
  request = DecodeConversationCompact(
      R"({"format":"anthropic","system":"be brief","messages":[{"role":"user","content":"hi"}]})");
  ASSERT_TRUE(request.ok()) << request.error().detail;
  EXPECT_EQ(request->conversation.system, "be brief");
}

TEST(DecodeConversationCompact, RefusesWithTheKindAndPath) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"", "invalid_json"},
      {"[]", "invalid_request"},
      {R"({"messages":[]})", "$.format"},
      {R"({"format":"openai"})", "$.messages"},
      {R"({"format":"anthropic","input":[]})", "$.messages"},
      {R"({"format":"openai-responses","messages":[]})", "$.input"},
      {R"({"format":"openai","messages":[],"system":"x"})", "system"},
      {R"({"format":"openai","messages":[],"options":{"pins":[1,1]}})", "$.options.pins[1]"},
      {R"({"format":"openai","messages":[],"options":{"coverage":"all"}})", "$.options.coverage"},
      {R"({"format":"openai","messages":[],"options":{"model":""}})", "$.options.model"},
      {R"({"format":"openai","messages":[],"options":{"compactor":""}})", "$.options.compactor"},
      {R"({"format":"openai","messages":[],"options":{"context_window":-1}})",
       "$.options.context_window"},
      {R"({"format":"openai","messages":[],"store":1})", "$.store"},
      {R"({"format":"openai","messages":[{"role":"user"}]})", "element 0: $.messages[0]"},
  };
  for (const auto& [body, named] : cases) {
    auto request = DecodeConversationCompact(body);
    ASSERT_FALSE(request.ok()) << body;
    const std::string said =
        std::string(ApiErrorKindName(request.error().kind)) + " " + request.error().detail;
    EXPECT_NE(said.find(named), std::string::npos) << body << ": " << said;
  }
}

TEST(DecodeInput, TakesANonEmptyTextAndNothingElse) {
  auto ok = DecodeInput(R"({"text":"hello"})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->text, "hello");
  EXPECT_EQ(DecodeInput(R"({"text":""})").error().kind, ApiErrorKind::kInvalidRequest);
  EXPECT_EQ(DecodeInput(R"({})").error().kind, ApiErrorKind::kInvalidRequest);
  EXPECT_EQ(DecodeInput(R"({"text":"a","role":"system"})").error().kind,
            ApiErrorKind::kInvalidRequest);
  EXPECT_EQ(DecodeInput("{\"text\":\"\xff\"}").error().kind, ApiErrorKind::kInvalidJson);
  EXPECT_TRUE(DecodeEmptyObject("").ok());
  EXPECT_TRUE(DecodeEmptyObject("{}").ok());
  EXPECT_EQ(DecodeEmptyObject(R"({"now":true})").error().kind, ApiErrorKind::kInvalidRequest);
  EXPECT_EQ(DecodeEmptyObject("[]").error().kind, ApiErrorKind::kInvalidRequest);
}

TEST(DecodeEventsRequest, ReadsFromLoopKindAndLastEventId) {
  auto live = DecodeEventsRequest({}, std::nullopt);
  ASSERT_TRUE(live.ok());
  EXPECT_FALSE(live->from);
  auto all = DecodeEventsRequest(
      {{"from", "3"}, {"loop", std::string(kLoop)}, {"kind", "CompactionCommitted,LoopIdle"}},
      std::nullopt);
  ASSERT_TRUE(all.ok()) << all.error().detail;
  EXPECT_EQ(*all->from, 3u);
  EXPECT_EQ(all->loop->ToString(), kLoop);
  ASSERT_TRUE(all->kinds.has_value());
  EXPECT_EQ(*all->kinds,
            (std::vector<EventKind>{EventKind::kCompactionCommitted, EventKind::kLoopIdle}));
  // Last-Event-ID wins over from: a reconnecting EventSource repeats its URL.
  auto resumed = DecodeEventsRequest({{"from", "1"}}, "41");
  ASSERT_TRUE(resumed.ok());
  EXPECT_EQ(*resumed->from, 42u);
  EXPECT_EQ(*DecodeEventsRequest({{"from", "9223372036854775807"}}, std::nullopt)->from,
            9223372036854775807u);
}

TEST(DecodeEventsRequest, RefusesMalformedUnknownAndRepeatedParameters) {
  const std::pair<QueryParameters, std::optional<std::string_view>> cases[] = {
      {{{"from", "0"}}, std::nullopt},
      {{{"from", "-1"}}, std::nullopt},
      {{{"from", "1x"}}, std::nullopt},
      {{{"from", ""}}, std::nullopt},
      {{{"from", "9223372036854775808"}}, std::nullopt},
      {{{"from", "1"}, {"from", "2"}}, std::nullopt},
      {{{"loop", "nope"}}, std::nullopt},
      {{{"kind", "compactioncommitted"}}, std::nullopt},
      {{{"kind", "LoopIdle,"}}, std::nullopt},
      {{{"since", "1"}}, std::nullopt},
      {{}, "abc"},
      {{}, "0"},
      {{}, "9223372036854775807"},
  };
  for (const auto& [query, last] : cases) {
    auto decoded = DecodeEventsRequest(query, last);
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.error().kind, ApiErrorKind::kInvalidQuery) << decoded.error().detail;
  }
}

TEST(DecodeWaitRequest, TakesZeroToTheCapAndNothingElse) {
  EXPECT_EQ(*DecodeWaitRequest({}), std::chrono::milliseconds(0));
  EXPECT_EQ(*DecodeWaitRequest({{"wait_ms", "0"}}), std::chrono::milliseconds(0));
  EXPECT_EQ(*DecodeWaitRequest({{"wait_ms", "30000"}}), kMaxWait);
  EXPECT_EQ(DecodeWaitRequest({{"wait_ms", "30001"}}).error().kind, ApiErrorKind::kInvalidQuery);
  EXPECT_EQ(DecodeWaitRequest({{"wait_ms", "-5"}}).error().kind, ApiErrorKind::kInvalidQuery);
  EXPECT_EQ(DecodeWaitRequest({{"wait", "5"}}).error().kind, ApiErrorKind::kInvalidQuery);
  EXPECT_EQ(RefuseQuery({{"x", ""}}).error().kind, ApiErrorKind::kInvalidQuery);
  EXPECT_TRUE(RefuseQuery({}).ok());
}

TEST(IsOrigin, TakesWhatABrowserSendsAndNothingElse) {
  for (const char* good :
       {"http://app.example", "https://app.example:8443", "http://127.0.0.1:3000",
        "http://[::1]:8080", "https://localhost", "http://a-b.c"}) {
    EXPECT_TRUE(IsOrigin(good)) << good;
  }
  for (const char* bad : {"",
                          "app.example",
                          "ftp://app.example",
                          "http://",
                          "http://App.example",
                          "http://app.example/",
                          "http://app.example/path",
                          "http://app.example:",
                          "http://app.example:0",
                          "http://app.example:65536",
                          "http://app.example:80x",
                          "http://[::1",
                          "http://[]",
                          "http://[::1]x",
                          "http://[::1]:",
                          "*",
                          "null",
                          "http://app example",
                          "http://.app",
                          "http://app.example:123456"}) {
    EXPECT_FALSE(IsOrigin(bad)) << bad;
  }
}

// The name LoopCreated records for a loop's compactor reads back as the same choice; a journal
// written before compactors were recorded ("") is the offline one, and anything else is refused.
TEST(CompactorName, ReadsBackWhatItWrote) {
  for (const CompactorChoice& choice : {CompactorChoice{}, CompactorChoice{false, "summarizer"}}) {
    auto parsed = ParseCompactorName(CompactorName(choice));
    ASSERT_TRUE(parsed.ok()) << CompactorName(choice);
    EXPECT_EQ(*parsed, choice);
  }
  EXPECT_EQ(CompactorName(CompactorChoice{false, "m"}), "model:m");
  EXPECT_EQ(ParseCompactorName("").value(), CompactorChoice{});
  for (std::string_view bad : {"model:", "extractive", "Model:m", "offline "}) {
    auto parsed = ParseCompactorName(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.error().find("neither \"offline\" nor \"model:NAME\""), std::string::npos);
  }
}

}  // namespace
}  // namespace harness::serve

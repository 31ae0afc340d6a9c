// The wire of `harness serve` (docs/serve.md): typed errors, the routes, and the decoders of
// what a request carries (bodies, query parameters, the Last-Event-ID header). Everything here
// is a pure function of its input, so the router and the decoders are tested and fuzzed
// without a server (api_test.cc, fuzz/serve_request_fuzz.cc).
//
// Contract:
// - Every refusal is an ApiError: a kind whose name and HTTP status are part of the wire
//   (ApiErrorKindName, HttpStatusOf) and a detail for a person, which never quotes more than a
//   few bytes of the request.
// - Bodies are strict JSON (core/json.h: one value, UTF-8, no duplicate member) within
//   kMaxJsonDepth; a body that is not is kInvalidJson. A well-formed body with an unknown member
//   at any level, a missing member or a wrong type is kInvalidRequest, its detail naming the
//   JSONPath. An empty body stands for {} where every member is optional.
// - Query parameters are decoded (percent-escapes undone) by the HTTP layer; a parameter the
//   route does not define, or one given twice, is kInvalidQuery.
// Thread safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/core/env.h"
#include "harness/core/result.h"
#include "harness/core/uuid.h"
#include "harness/dialect/dialect.h"
#include "harness/event/event.h"

namespace harness::serve {

enum class ApiErrorKind : std::uint8_t {
  kInvalidJson,            // 400: the body is not strict JSON
  kInvalidRequest,         // 400: the body's JSON does not match the request's schema
  kInvalidQuery,           // 400: a query parameter or header is unknown, repeated or malformed
  kInvalidId,              // 400: a path segment that must be a UUID is not one
  kUnknownModel,           // 400: the request names a model the server was not configured with
  kInvalidArgument,        // 400: the runtime refused the input or the loop definition
  kUnauthorized,           // 401: the bearer token is missing or wrong
  kNotFound,               // 404: no such route
  kSessionNotFound,        // 404
  kLoopNotFound,           // 404
  kCommandNotFound,        // 404
  kToolCallNotFound,       // 404: no call of a client tool with that id waits in the loop
  kMethodNotAllowed,       // 405
  kLeaseHeld,              // 409: another writer holds the session's lease
  kLoopExited,             // 409
  kCompactionUnsupported,  // 409
  kSessionFaulted,         // 409: the session's journal refused a write; it takes no more work
  kSessionSuspended,       // 409: the session was suspended while the request ran
  kRestoreRefused,         // 409: the journal or the configured models contradict the session
  kToolCallAnswered,       // 409: the tool call already has its result
  kTooLarge,               // 413: the body is over the server's limit
  kJournal,                // 500: the journal failed
  kInternal,               // 500: the runtime failed in a way the request could not cause
  kShuttingDown,           // 503: the server is stopping
  kTooManySessions,        // 503: the server holds its maximum of sessions in memory
  kOriginNotAllowed,       // 403: a preflight or a change from an origin not allowed
  kMessageNotFound,        // 404: no message of the loop's history has that id (docs/pins.md)
  kNotPinnable,            // 409: the summary, or one pin more than a loop may hold
  kNothingToUndo,          // 409: no compaction left to undo (docs/undo.md)
  kLoopBusy,               // 409: a turn or a compaction is running; undo once the loop is idle
  kUndoRefused,            // 409: the restored history would not fit (with the figures)
  kNoProposal,             // 404: no proposal of that attempt waits (docs/preview.md)
  kNothingToMask,          // 409: no old tool output is large enough and unmasked (masking.md)
  kNotMasked,              // 404: that message is not a masked tool output
  kMaskRefused,            // 409: the changed history would not fit or could not be counted
  kInvalidHeader,          // 400: a header with a control byte, repeated, or Host missing
  kHostNotAllowed,         // 421: without a token, a Host that is not the server's own
  kUnsupportedMediaType,   // 415: a body that is not sent as application/json
  kCompactionRejected,     // 422: POST /v1/compact ran and was rejected (ApiError::reason)
  kInputNotQueued,         // 409: no queued input has that id (started, withdrawn, or unknown)
};
// The kinds are 0 .. kApiErrorKindCount - 1.
inline constexpr std::size_t kApiErrorKindCount = 40;

// "invalid_json", "invalid_request", "invalid_query", "invalid_id", "unknown_model",
// "invalid_argument", "unauthorized", "not_found", "session_not_found", "loop_not_found",
// "command_not_found", "tool_call_not_found", "method_not_allowed", "lease_held", "loop_exited",
// "compaction_unsupported", "session_faulted", "session_suspended", "restore_refused",
// "tool_call_answered", "too_large", "journal", "internal", "shutting_down",
// "too_many_sessions", "origin_not_allowed", "message_not_found", "not_pinnable",
// "nothing_to_undo", "loop_busy", "undo_refused", "no_proposal", "nothing_to_mask", "not_masked",
// "mask_refused", "invalid_header", "host_not_allowed", "unsupported_media_type",
// "compaction_rejected", "input_not_queued".
std::string_view ApiErrorKindName(ApiErrorKind kind);
unsigned HttpStatusOf(ApiErrorKind kind);

// kLeaseHeld: the server process that holds the session (its lease owner id, which that
// process prints when it starts), when its lease ends unless it renews it, and the URL it
// advertises (`harness serve --advertise-url`; "" when none).
struct ApiLeaseHolder {
  Uuid owner;
  WallTime expires_at{};
  std::string url;
};

struct ApiError {
  ApiError() = default;
  ApiError(ApiErrorKind kind_in, std::string detail_in,
           std::optional<ApiLeaseHolder> holder_in = std::nullopt)
      : kind(kind_in), detail(std::move(detail_in)), holder(std::move(holder_in)) {}

  ApiErrorKind kind = ApiErrorKind::kInternal;
  std::string detail;
  std::optional<ApiLeaseHolder> holder;  // kLeaseHeld, when the journal named the holder
  // kCompactionRejected: the CompactRejectReason's wire name ("unavailable", …) and, when the
  // runtime said why, the RejectDetailKind's; "" for none.
  std::string reason;
  std::string reason_detail;
};

// {"error":{"kind":"…","detail":"…"}}, and for a held lease whose holder is known
// {"error":{"kind":"lease_held","detail":"…","holder":{"owner":"<uuid>","lease_expires_at_ms":N}}}
// with N the end of the holder's lease in Unix milliseconds on the journal's clock, and the
// holder's member "url" after them when it advertises one. A rejected compaction adds
// "reason" (and "reason_detail" when there is one) after "detail".
std::string EncodeApiError(const ApiError& error);

// ---- Routes ----

enum class RouteKind : std::uint8_t {
  kCreateSession,        // POST   /v1/sessions
  kListSessions,         // GET    /v1/sessions
  kGetSession,           // GET    /v1/sessions/{session}
  kDeleteSession,        // DELETE /v1/sessions/{session}
  kExport,               // GET    /v1/sessions/{session}/export
  kEvents,               // GET    /v1/sessions/{session}/events
  kInput,                // POST   /v1/sessions/{session}/loops/{loop}/input
  kCompact,              // POST   /v1/sessions/{session}/loops/{loop}/compact
  kInterrupt,            // POST   /v1/sessions/{session}/loops/{loop}/interrupt
  kHistory,              // GET    /v1/sessions/{session}/loops/{loop}/history
  kContext,              // GET    /v1/sessions/{session}/loops/{loop}/context
  kToolCalls,            // GET    /v1/sessions/{session}/loops/{loop}/tool_calls
  kToolResults,          // POST   /v1/sessions/{session}/loops/{loop}/tool_results
  kPin,                  // PUT    /v1/sessions/{session}/loops/{loop}/pins/{message}
  kUnpin,                // DELETE /v1/sessions/{session}/loops/{loop}/pins/{message}
  kUndo,                 // POST   /v1/sessions/{session}/loops/{loop}/undo
  kApprove,              // POST   /v1/sessions/{session}/loops/{loop}/proposals/{attempt}/approve
  kDiscard,              // POST   /v1/sessions/{session}/loops/{loop}/proposals/{attempt}/discard
  kMask,                 // POST   /v1/sessions/{session}/loops/{loop}/mask
  kUnmaskAll,            // POST   /v1/sessions/{session}/loops/{loop}/unmask
  kMaskedOriginal,       // GET    /v1/sessions/{session}/loops/{loop}/masked/{message}
  kUnmask,               // DELETE /v1/sessions/{session}/loops/{loop}/masked/{message}
  kCancelInput,          // DELETE /v1/sessions/{session}/loops/{loop}/inputs/{input}
  kCancelDelegate,       // DELETE …/loops/{loop}/delegate_requests/{request}
  kGetCommand,           // GET    /v1/commands/{command}
  kGetSessionCommand,    // GET    /v1/sessions/{session}/commands/{command}
  kOpenApi,              // GET    /v1/openapi.json
  kMetrics,              // GET    /metrics
  kCompactConversation,  // POST /v1/compact
  // The gateway's wires (serve/gateway.h, docs/spec/gateway.md): answered in the provider's
  // shapes, errors included.
  kGatewayResponses,         // POST /v1/responses
  kGatewayResponsesCompact,  // POST /v1/responses/compact
  kGatewayMessages,          // POST /v1/messages
  kGatewayChatCompletions,   // POST /v1/chat/completions
  kPreflight,                // OPTIONS on any path that has a route (CORS)
  kAsset,                    // GET, HEAD / and /<file> of the inspector (serve/static_assets.h)
};

struct EmbeddedFile;

// One route: its method, its path with {session}, {loop}, {command}, {message} and {attempt}
// standing for ids (the OpenAPI document's path syntax), and its kind.
struct RouteSpec {
  std::string_view method;
  std::string_view path;
  RouteKind kind;
};

// Every route of the API: all but kPreflight, which any routed path has, and kAsset, the
// inspector's files, which are not part of the API.
std::span<const RouteSpec> Routes();

struct Route {
  RouteKind kind = RouteKind::kListSessions;
  Uuid session;
  Uuid loop;
  Uuid command;
  Uuid item;                            // {message} or {attempt}
  std::string allowed;                  // kPreflight: the path's methods, "GET, DELETE"
  const EmbeddedFile* asset = nullptr;  // kAsset: the file
};

// The route of `method` and `path` (the path without its query). "/" and the inspector's files
// ("/inspector.js", …) are kAsset (GET and HEAD); the rest come from Routes(). No route with that
// path: kNotFound; an id segment that is not a canonical UUID, or is the nil UUID: kInvalidId
// (whatever the method);
// OPTIONS: kPreflight with the path's methods; a path with a route but not for this method:
// kMethodNotAllowed (the detail lists the methods it has). A trailing slash or an empty segment
// is no route.
Result<Route, ApiError> MatchRoute(std::string_view method, std::string_view path);

// ---- Requests ----

// Bodies are at most this deep: a tool's input schema, five levels down in a create request,
// may nest 27 levels.
inline constexpr std::size_t kMaxJsonDepth = 32;
inline constexpr std::uint64_t kMaxKeepRecentSegments = 1'000'000;
inline constexpr std::uint64_t kMaxKeepRecentTokens = 100'000'000;
// Loops per POST /v1/sessions.
inline constexpr std::size_t kMaxLoopsPerSession = 16;

// The compactor of a loop: the offline extractive one, or a model the server was configured
// with (by its name).
struct CompactorChoice {
  bool offline = true;
  std::string model;  // when !offline
  friend bool operator==(const CompactorChoice&, const CompactorChoice&) = default;
};

// The name a loop's LoopCreated records for its compactor (LoopDefinition::compactor_name):
// "offline", or "model:" and the configured model's name. ParseCompactorName reads it back; ""
// (a journal written before compactors were recorded) is the offline compactor, and any other
// text is an error that says so.
std::string CompactorName(const CompactorChoice& choice);
Result<CompactorChoice, std::string> ParseCompactorName(std::string_view name);

// A tool that runs on the client: the model sees its definition; a call of it waits for the
// client's result (POST …/tool_results).
struct ClientToolRequest {
  std::string name;         // 1..kMaxToolNameBytes of [A-Za-z0-9_-], unique in the loop
  std::string description;  // at most kMaxToolDescriptionBytes; "" when absent
  std::string input_schema = "{\"type\":\"object\"}";  // compact JSON text of an object
};

struct LoopRequest {
  std::string model;  // a configured model's name
  CompactorChoice compactor;
  std::string system_prompt;
  bool automatic_compaction = true;  // policy.automatic
  bool mask_first = true;            // policy.masking "first" (docs/masking.md) or "off"
  // policy.coverage "off", "report", "repair" or "enforce"; unset, repair for a model compactor
  // and the configured model's (report) for the offline one (docs/decisions.md P21).
  std::optional<CoverageMode> coverage;
  // policy.keep_recent_segments / keep_recent_tokens: the retained tail's targets; unset, the
  // configured model's.
  std::optional<std::uint64_t> keep_recent_segments;
  std::optional<std::uint64_t> keep_recent_tokens;
  // policy.max_steps_per_turn: the model calls one turn may make (1 to kMaxStepsPerTurn,
  // journaled with the loop); unset, kDefaultMaxStepsPerTurn.
  std::optional<std::uint64_t> max_steps_per_turn;
  std::vector<ClientToolRequest>
      tools;  // at most kMaxLoopTools (event/lifecycle.h, with the bounds of each tool)
  // The loop's initial history, a transcript in the harness codec (docs/content.md): what
  // `harness chat --history` starts from, for a conversation held elsewhere until now.
  std::vector<Message> history;
};

struct CreateSessionRequest {
  std::vector<LoopRequest> loops;  // 1..kMaxLoopsPerSession; the first is the active loop
};

// {"loops":[{"model":"NAME","compactor":"offline"|"NAME","system_prompt":"…",
//            "policy":{"automatic":true,"masking":"first"|"off","keep_recent_segments":2,
//                      "keep_recent_tokens":8000,"coverage":"off"|"report"|"repair"|"enforce",
//                      "max_steps_per_turn":64},
//            "tools":[{"name":"…","description":"…","input_schema":{…}}],
//            "history":[MESSAGE,…]}]};
// model is required, the rest optional (history none: DecodeTranscriptValue's rules, its
// refusal as invalid_request with the message's path; compactor "offline", system prompt none,
// automatic compaction on, masking first, the configured model's tail targets, coverage repair for
// a model compactor and report for the offline one, no tools; a tool's description
// "" and its schema {"type":"object"}). keep_recent_segments is at most kMaxKeepRecentSegments,
// keep_recent_tokens at most kMaxKeepRecentTokens, max_steps_per_turn 1 to kMaxStepsPerTurn
// (default kDefaultMaxStepsPerTurn); the runtime judges the policy as a whole
// (kInvalidArgument).
Result<CreateSessionRequest, ApiError> DecodeCreateSession(std::string_view body);

// {"text":"…"}: a non-empty text, the user's input to a loop.
struct InputRequest {
  std::string text;
  InputOrigin origin = InputOrigin::kDirect;  // "origin": "direct" (absent), "delegate_request",
                                              // "subagent_result" (docs/runtime.md §4)
};
Result<InputRequest, ApiError> DecodeInput(std::string_view body);

// POST …/tool_results: {"results":[{"tool_use_id":"…","content":"…","is_error":false}]}, 1 to
// kMaxToolResults results with distinct non-empty tool_use_ids of at most kMaxToolUseIdBytes;
// content is required (it may be empty), is_error optional (false).
inline constexpr std::size_t kMaxToolResults = 128;
inline constexpr std::size_t kMaxToolUseIdBytes = 256;
struct ToolResultRequest {
  std::string tool_use_id;
  std::string content;
  bool is_error = false;
};
Result<std::vector<ToolResultRequest>, ApiError> DecodeToolResults(std::string_view body);

// An empty body or {} (compact, interrupt).
Status<ApiError> DecodeEmptyObject(std::string_view body);

// POST …/compact: {} or {"instructions":"…","preview":true}, both optional (docs/preview.md,
// docs/compact-focus.md); the instructions' own rules are the runtime's (invalid_argument).
struct CompactRequest {
  std::string instructions;
  bool preview = false;
};
Result<CompactRequest, ApiError> DecodeCompact(std::string_view body);

// POST /v1/compact (docs/serve.md "Compacting a conversation the client holds"):
// {"format":"harness"|"openai"|"openai-responses"|"anthropic", the conversation, "options":{…},
//  "store":false}. The conversation is `messages` (harness: a transcript in the harness codec;
// openai: Chat Completions messages; anthropic: Messages messages, with `system` optional),
// or `input` (openai-responses: Responses input items), read with its dialect's reader
// (dialect.h) from the body's own bytes, so that an element is kept exactly as sent. options:
// model (a configured model's name, default "offline"), compactor ("offline" or a configured
// model's name), context_window, max_output_tokens, keep_recent_segments, keep_recent_tokens,
// max_summary_tokens, instructions, coverage ("off"|"report"|"repair"|"enforce"), pins (indexes
// of elements, at most kMaxCompactPins, each once); all optional. Every member is checked:
// unknown ones, and the other formats' conversation members, are refused.
inline constexpr std::size_t kMaxCompactPins = 64;
inline constexpr std::uint64_t kMaxCompactWindow = 100'000'000;
struct ConversationCompactRequest {
  std::optional<Dialect> dialect;    // nullopt: the harness codec
  Transcript messages;               // the harness codec's messages
  DialectConversation conversation;  // a dialect's, as read
  std::string model = "offline";
  CompactorChoice compactor;
  std::optional<std::uint64_t> context_window;
  std::optional<std::uint64_t> max_output_tokens;
  std::optional<std::uint64_t> keep_recent_segments;
  std::optional<std::uint64_t> keep_recent_tokens;
  std::optional<std::uint64_t> max_summary_tokens;
  std::string instructions;
  std::optional<CoverageMode> coverage;
  std::vector<std::size_t> pins;  // element indexes, as given
  bool store = false;
};
// "harness", "openai", "openai-responses", "anthropic".
std::string_view CompactFormatName(const std::optional<Dialect>& dialect);
Result<ConversationCompactRequest, ApiError> DecodeConversationCompact(std::string_view body);

using QueryParameters = std::vector<std::pair<std::string, std::string>>;

// GET …/events: `from` (a sequence number, at least 1), `loop` (a loop id), `kind` (event type
// names separated by commas, e.g. CompactionCommitted,CompactionRejected), and the
// Last-Event-ID header (a sequence number an earlier stream delivered). Last-Event-ID wins over
// `from`, as a browser's EventSource repeats the URL it started with when it reconnects; it
// means from last + 1. Neither: the live stream only.
struct EventsRequest {
  std::optional<std::uint64_t> from;
  std::optional<Uuid> loop;
  std::optional<std::vector<EventKind>> kinds;
  // ?text_deltas=true: the stream also carries text_delta frames (docs/serve.md "Text deltas").
  bool text_deltas = false;
};
Result<EventsRequest, ApiError> DecodeEventsRequest(const QueryParameters& query,
                                                    std::optional<std::string_view> last_event_id);

// GET /v1/commands/{id} and /v1/sessions/{session}/commands/{id}: `wait_ms` from 0 to kMaxWait
// (0 when absent: answer at once).
inline constexpr std::chrono::milliseconds kMaxWait{30'000};
Result<std::chrono::milliseconds, ApiError> DecodeWaitRequest(const QueryParameters& query);

// Whether `origin` is a browser origin as the Origin header carries it: http:// or https://, a
// lowercase host name, an IPv4 address or [an IPv6 address], an optional :port, and nothing else
// (no path, no trailing slash). The CORS allow-list takes only such origins.
bool IsOrigin(std::string_view origin);

// Routes without parameters refuse any.
Status<ApiError> RefuseQuery(const QueryParameters& query);

}  // namespace harness::serve

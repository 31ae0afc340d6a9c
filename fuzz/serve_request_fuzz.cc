// libFuzzer target for `harness serve`'s router and request decoders (src/serve/api.h).
//
// The first byte picks what the rest is: 0 a POST /v1/sessions body, 1 an input body, 2 an
// empty-object body, 3 a query string ("a=b&c=d", then an optional Last-Event-ID after a NUL)
// for the events and wait decoders, 4 a CORS origin, 5 an If-None-Match value for each of the
// inspector's files (serve/static_assets.h), 6 a tool_results body, 8 a compact body, 9 a
// request head for the guard (serve/request_guard.h: a flags byte, then lines "METHOD",
// "VERSION" and "Name: value" headers, a value holding any byte but a newline), 10 a path for
// the percent-decoding and then the router, 12 a raw head for HiddenBytes (split at its NULs),
// 13 a POST /v1/compact body, anything else a request line "METHOD PATH" for the router.
// Invariants: nothing crashes or throws; every refusal has a kind with a 4xx status; an accepted
// session has 1 to kMaxLoopsPerSession loops, each with a non-empty model and at most
// kMaxLoopTools tools of distinct valid names, bounded descriptions and object schemas that
// are JSON; accepted tool results are 1 to kMaxToolResults with distinct bounded ids; an
// accepted input has
// a non-empty text; an accepted compaction of a conversation has a model, at most
// kMaxCompactPins distinct pins and a conversation its format's codec or writer takes back;
// an accepted wait is at most kMaxWait; an accepted events request starts at
// a sequence from 1; a matched route's ids are canonical (they print as the path spelled them);
// an OPTIONS route is a preflight naming methods; an accepted origin starts with http:// or
// https:// and has no path; an asset route is a GET of a file whose name the path spells; an
// asset's answer is 200 with its bytes or 304 without a body, with the same headers either way;
// a head the guard lets through has no control byte in a header, a Host when it is HTTP/1.1, a
// loopback Host without a token, an Origin of its own Host or the allow-list on a change, and
// JSON as the type of a body; decoding a path never lengthens it, and adds no NUL and no slash.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/internal/json_dom.h"
#include "harness/content/codec.h"
#include "harness/dialect/dialect.h"
#include "serve/api.h"
#include "serve/request_guard.h"
#include "serve/static_assets.h"

namespace {

using namespace harness::serve;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "serve_request_fuzz: %s\n", what);
    std::abort();
  }
}

void CheckRefusal(const ApiError& error) {
  const unsigned status = HttpStatusOf(error.kind);
  Check(status >= 400 && status < 500, "a request's refusal is not a 4xx");
  Check(!ApiErrorKindName(error.kind).empty(), "a refusal kind without a name");
}

QueryParameters SplitQuery(std::string_view text) {
  QueryParameters out;
  std::size_t at = 0;
  while (at <= text.size() && !text.empty()) {
    const std::size_t amp = text.find('&', at);
    const std::string_view pair = text.substr(at, amp == std::string_view::npos ? amp : amp - at);
    const std::size_t eq = pair.find('=');
    out.emplace_back(std::string(pair.substr(0, eq)),
                     eq == std::string_view::npos ? "" : std::string(pair.substr(eq + 1)));
    if (amp == std::string_view::npos)
      break;
    at = amp + 1;
  }
  return out;
}

std::string Lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void CheckGuard(std::string_view text) {
  if (text.empty())
    return;
  const std::uint8_t flags = static_cast<std::uint8_t>(text.front());
  std::vector<std::string_view> lines;
  for (std::string_view rest = text.substr(1);;) {
    const std::size_t nl = rest.find('\n');
    lines.push_back(rest.substr(0, nl));
    if (nl == std::string_view::npos)
      break;
    rest = rest.substr(nl + 1);
  }
  if (lines.size() < 2)
    return;
  RequestHead head{lines[0], lines[1], {}, {}, {}};
  for (std::size_t i = 2; i < lines.size(); ++i) {
    const std::size_t colon = lines[i].find(": ");
    if (colon != std::string_view::npos)
      head.headers.push_back({lines[i].substr(0, colon), lines[i].substr(colon + 2)});
  }
  GuardOptions options;
  options.token = (flags & 1) != 0;
  if ((flags & 2) != 0)
    options.cors_origins = {"http://127.0.0.1:3000"};
  if ((flags & 4) != 0)
    options.advertise_url = "https://harness.example";
  const RequestGuard guard(options);
  auto checked = guard.Check(head, 8420);
  if (!checked.ok()) {
    CheckRefusal(checked.error());
    return;
  }
  for (const HeaderField& field : head.headers) {
    for (char c : std::string(field.name) + std::string(field.value))
      Check(static_cast<unsigned char>(c) >= 0x20 || c == '\t', "a control byte let through");
  }
  const auto host = head.Find("Host");
  Check(host || head.version == "HTTP/1.0", "an HTTP/1.1 request without Host let through");
  if (host && !options.token) {
    const std::string h = Lowercase(*host);
    Check(h.starts_with("localhost") || h.starts_with("127.") || h.starts_with("[") ||
              h.starts_with("harness.example"),
          "without a token, a Host that is not loopback let through");
  }
  const bool changes = head.method != "GET" && head.method != "HEAD" && head.method != "OPTIONS";
  if (const auto origin = head.Find("Origin"); changes && origin) {
    // The guard compares hosts and ports as parsed: here only the host's name is looked for.
    const std::string o = Lowercase(*origin);
    std::string name = host ? Lowercase(*host) : "";
    name = name.starts_with("[") ? "[" : name.substr(0, name.find(':'));
    Check(*origin == "http://127.0.0.1:3000" || o.starts_with("https://harness.example") ||
              (host && o.find(name) != std::string::npos),
          "a change from a foreign origin let through");
  }
  const auto length = head.Find("Content-Length");
  if (head.Find("Transfer-Encoding") ||
      (length && length->find_first_not_of("0 \t") != std::string_view::npos)) {
    const auto type = head.Find("Content-Type");
    Check(type && Lowercase(*type).find("application/json") != std::string::npos,
          "a body that is not JSON let through");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  const std::uint8_t which = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (which) {
    case 0: {
      auto request = DecodeCreateSession(text);
      if (!request.ok()) {
        CheckRefusal(request.error());
        break;
      }
      Check(!request->loops.empty() && request->loops.size() <= kMaxLoopsPerSession,
            "a session with a loop count out of bounds");
      for (const LoopRequest& loop : request->loops) {
        Check(!loop.model.empty(), "a loop without a model");
        Check(loop.compactor.offline || !loop.compactor.model.empty(), "an empty compactor");
        Check(loop.tools.size() <= harness::kMaxLoopTools, "too many tools");
        // A history is a transcript the codec accepted: it encodes again.
        if (!loop.history.empty())
          Check(harness::EncodeTranscript(loop.history).ok(), "a history that does not encode");
        for (std::size_t i = 0; i < loop.tools.size(); ++i) {
          const ClientToolRequest& tool = loop.tools[i];
          Check(!tool.name.empty() && tool.name.size() <= harness::kMaxToolNameBytes,
                "a tool name out of bounds");
          for (char c : tool.name)
            Check(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-',
                  "a tool name with a byte outside [A-Za-z0-9_-]");
          for (std::size_t j = 0; j < i; ++j)
            Check(loop.tools[j].name != tool.name, "two tools of one name");
          Check(tool.description.size() <= harness::kMaxToolDescriptionBytes,
                "a description too long");
          Check(tool.input_schema.size() <= harness::kMaxToolSchemaBytes, "a schema too long");
          auto schema = harness::ParseStrictJson(tool.input_schema);
          Check(schema.ok() && schema->is_object(), "a schema that is not a JSON object");
        }
      }
      break;
    }
    case 6: {
      auto results = DecodeToolResults(text);
      if (!results.ok()) {
        CheckRefusal(results.error());
        break;
      }
      Check(!results->empty() && results->size() <= kMaxToolResults,
            "a result count out of bounds");
      for (std::size_t i = 0; i < results->size(); ++i) {
        const std::string& id = (*results)[i].tool_use_id;
        Check(!id.empty() && id.size() <= kMaxToolUseIdBytes, "a tool_use_id out of bounds");
        for (std::size_t j = 0; j < i; ++j)
          Check((*results)[j].tool_use_id != id, "two results for one call");
      }
      break;
    }
    case 1: {
      auto input = DecodeInput(text);
      if (!input.ok())
        CheckRefusal(input.error());
      else
        Check(!input->text.empty(), "an empty input was accepted");
      break;
    }
    case 8: {
      auto compact = DecodeCompact(text);
      if (!compact.ok())
        CheckRefusal(compact.error());
      break;
    }
    case 13: {
      auto request = DecodeConversationCompact(text);
      if (!request.ok()) {
        CheckRefusal(request.error());
        break;
      }
      Check(!request->model.empty(), "a compaction without a model");
      Check(request->compactor.offline || !request->compactor.model.empty(), "an empty compactor");
      Check(request->pins.size() <= kMaxCompactPins, "too many pins");
      for (std::size_t i = 0; i < request->pins.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j)
          Check(request->pins[i] != request->pins[j], "a pin given twice");
      }
      if (!request->dialect) {
        Check(harness::EncodeTranscript(request->messages).ok(),
              "a conversation that does not encode");
      } else {
        // The elements as sent write back, after any head.
        const auto& elements = request->conversation.elements;
        auto written = *request->dialect == harness::Dialect::kOpenAiChat
                           ? harness::WriteOpenAiChat("", {}, elements)
                       : *request->dialect == harness::Dialect::kOpenAiResponses
                           ? harness::WriteOpenAiResponses("", {}, elements)
                           : harness::WriteAnthropicMessages({}, elements);
        Check(written.ok(), "a conversation whose elements do not write back");
      }
      break;
    }
    case 2: {
      auto empty = DecodeEmptyObject(text);
      if (!empty.ok())
        CheckRefusal(empty.error());
      break;
    }
    case 3: {
      const std::size_t nul = text.find('\0');
      const QueryParameters query = SplitQuery(text.substr(0, nul));
      std::optional<std::string_view> last;
      if (nul != std::string_view::npos)
        last = text.substr(nul + 1);
      auto events = DecodeEventsRequest(query, last);
      if (!events.ok())
        CheckRefusal(events.error());
      else {
        Check(!events->from || *events->from >= 1, "an events request from sequence 0");
        Check(!events->text_deltas || std::find(query.begin(), query.end(),
                                                std::pair<std::string, std::string>{
                                                    "text_deltas", "true"}) != query.end(),
              "text deltas without text_deltas=true");
      }
      auto wait = DecodeWaitRequest(query);
      if (!wait.ok())
        CheckRefusal(wait.error());
      else
        Check(*wait <= kMaxWait, "a wait over the cap");
      break;
    }
    case 4: {
      if (IsOrigin(text)) {
        Check(text.starts_with("http://") || text.starts_with("https://"),
              "an origin without its scheme");
        Check(text.find('/', 8) == std::string_view::npos, "an origin with a path");
      }
      break;
    }
    case 9:
      CheckGuard(text);
      break;
    case 12: {
      // A head whose every byte is a separator or inside a parsed string hides nothing; one
      // whose parsed strings end early at a NUL hides what followed it.
      std::vector<std::string_view> parsed;
      std::size_t at = 0;
      while (at < text.size()) {
        const std::size_t nul = text.find('\0', at);
        const std::size_t end = nul == std::string_view::npos ? text.size() : nul;
        parsed.push_back(text.substr(at, end - at));
        at = end + 1;
      }
      Check(!HiddenBytes(text, parsed), "a head split at its NULs hides bytes");
      if (!parsed.empty() && parsed.front().size() > 1) {
        const char last = parsed.front().back();
        parsed.front().remove_suffix(1);
        Check(HiddenBytes(text, parsed) == (last != ' ' && last != '\t'),
              "a byte no parsed string covers was not found");
      }
      break;
    }
    case 10: {
      const std::string decoded = DecodePercent(text);
      Check(decoded.size() <= text.size(), "decoding lengthened the text");
      Check(std::count(decoded.begin(), decoded.end(), '\0') ==
                std::count(text.begin(), text.end(), '\0'),
            "decoding made a NUL");
      Check(std::count(decoded.begin(), decoded.end(), '/') ==
                std::count(text.begin(), text.end(), '/'),
            "decoding made a slash");
      if (auto route = MatchRoute("GET", decoded); route.ok() && !route->session.IsZero())
        Check(decoded.find(route->session.ToString()) != std::string::npos,
              "a session id the decoded path does not spell");
      break;
    }
    case 5: {
      for (const EmbeddedFile& file : InspectorFiles()) {
        const AssetResponse reply = AssetReply(file, text);
        const AssetResponse plain = AssetReply(file, std::nullopt);
        Check(plain.status == 200 && plain.body == file.body, "an asset without its bytes");
        Check(reply.status == 304 ? reply.body.empty()
                                  : reply.status == 200 && reply.body == file.body,
              "an asset answer that is neither its bytes nor not-modified");
        Check(reply.headers == plain.headers, "a not-modified answer with other headers");
        if (text == file.etag)
          Check(reply.status == 304, "the file's own tag did not match");
      }
      break;
    }
    default: {
      const std::size_t space = text.find(' ');
      if (space == std::string_view::npos)
        break;
      const std::string_view path = text.substr(space + 1);
      auto route = MatchRoute(text.substr(0, space), path);
      if (!route.ok()) {
        CheckRefusal(route.error());
        break;
      }
      if (route->kind == RouteKind::kPreflight)
        Check(!route->allowed.empty(), "a preflight that names no method");
      if (route->kind == RouteKind::kAsset) {
        Check(route->asset != nullptr &&
                  (text.substr(0, space) == "GET" || text.substr(0, space) == "HEAD"),
              "an asset route without its file or for another method");
        Check(
            path == "/" ? route->asset->name == "index.html" : path.substr(1) == route->asset->name,
            "an asset whose name the path does not spell");
      }
      if (!route->session.IsZero())
        Check(path.find(route->session.ToString()) != std::string_view::npos,
              "a session id the path does not spell");
      if (!route->loop.IsZero())
        Check(path.find(route->loop.ToString()) != std::string_view::npos,
              "a loop id the path does not spell");
      if (!route->command.IsZero())
        Check(path.find(route->command.ToString()) != std::string_view::npos,
              "a command id the path does not spell");
      if (!route->item.IsZero())
        Check(path.find(route->item.ToString()) != std::string_view::npos,
              "a message or attempt id the path does not spell");
      break;
    }
  }
  return 0;
}

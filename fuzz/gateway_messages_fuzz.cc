// libFuzzer target for the Messages gateway's compaction parsers
// (src/serve/gateway_messages_compaction.h).
//
// The first byte picks what the rest is: 0 a Messages request body, 1 a summary and a marker
// (split at the first NUL) for DecodeCompactionMarker, 2 an upstream event stream for the splice
// (fed in chunks whose sizes the next byte picks), 3 a compaction's replacement messages,
// 5 a Messages request body whose every journaled compaction was undone, anything else a Messages
// answer to put a block in front of.
// Invariants: nothing crashes or throws; every refusal is a 4xx invalid_request_error or
// request_too_large for a request, an api_error for the upstream's or the compaction's answer;
// an accepted request's upstream body is a JSON object without the compact edit whose messages
// the dialect reader takes, and a resumed request names its message and holds no compaction
// block; a marker decodes only to a carry that encodes back to the same marker, and a carry of a
// replacement comes back from its block's marker; the splice's output is an event stream that
// decodes, whatever the upstream sent; a block put in front of an answer is its first block.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/internal/json_dom.h"
#include "fuzz_check.h"
#include "harness/dialect/dialect.h"
#include "harness/http/sse.h"
#include "serve/gateway_messages_compaction.h"

namespace {

constexpr FuzzCheck Check{"gateway_messages_fuzz"};

void Request(std::string_view body, bool all_undone) {
  using namespace harness;
  serve::UndoneCompaction undone;
  if (all_undone)
    undone = [](const Uuid&) { return true; };
  auto read = serve::ReadMessagesGatewayRequest(body, DialectLimits{}, undone);
  if (!read.ok()) {
    Check(read.error().status == 400u || read.error().status == 413u, "a refusal is not a 4xx");
    Check(read.error().type == "invalid_request_error" || read.error().type == "request_too_large",
          "a refusal has another type");
    Check(!read.error().message.empty(), "a refusal says nothing");
    return;
  }
  const std::string sent = serve::UpstreamMessagesBody(body, *read);
  auto parsed = ParseStrictJson(sent);
  Check(parsed.ok() && parsed->is_object(), "the upstream body is not a JSON object");
  if (const auto cm = parsed->find("context_management");
      read->edit && cm != parsed->end() && cm->is_object() && cm->contains("edits")) {
    for (const Json& edit : (*cm)["edits"]) {
      Check(!(edit.is_object() && edit.contains("type") && edit["type"] == serve::kCompactEditType),
            "the compact edit reached the upstream");
    }
  }
  Check(ReadAnthropicMessages(sent).ok(), "the dialect reader refuses the upstream body");
  if (read->messages) {
    Check((read->resumed_at.has_value() && read->carried.has_value()) || !read->undone.empty(),
          "a rewritten request neither resumed nor dropped an undone block");
    Check(!all_undone || !read->resumed_at, "an undone compaction was resumed from");
    Check(ReadAnthropicMessages(*read->messages).ok(), "the resumed messages are unreadable");
  }
}

void Marker(std::string_view rest) {
  using namespace harness;
  const std::size_t nul = rest.find('\0');
  const std::string_view summary = rest.substr(0, nul);
  const std::string_view marker = nul == std::string_view::npos ? "" : rest.substr(nul + 1);
  auto carry = serve::DecodeCompactionMarker(summary, marker);
  if (!carry.ok())
    return;
  auto again =
      serve::DecodeCompactionMarker(summary, serve::EncodeCompactionMarker(summary, *carry));
  Check(again.ok() && *again == *carry, "a decoded marker does not encode back");
}

void Stream(std::string_view rest) {
  using namespace harness;
  if (rest.empty())
    return;
  const std::size_t chunk = 1 + static_cast<unsigned char>(rest[0]) % 64;
  rest.remove_prefix(1);
  serve::CompactionStreamSplice splice(
      serve::CompactionBlockJson("summary", serve::CompactionCarry{}), SseLimits{4096, 16384});
  std::string out;
  for (std::size_t at = 0; at < rest.size(); at += chunk)
    out += splice(rest.substr(at, chunk));
  SseDecoder decoder;
  std::vector<SseEvent> events;
  Check(decoder.Feed(out, events).ok() && decoder.Finish().ok(),
        "the relayed stream does not decode");
}

void Replacement(std::string_view messages) {
  using namespace harness;
  auto carry = serve::CarryOfReplacement(messages, std::nullopt);
  if (!carry.ok()) {
    Check(carry.error().type == "api_error", "an unreadable replacement is not an api_error");
    return;
  }
  Check(!carry->replacement.empty(), "a carry without its summary message");
  const std::string block = serve::CompactionBlockJson("s", *carry);
  auto parsed = ParseStrictJson(block);
  Check(parsed.ok(), "a block is not JSON");
  auto again =
      serve::DecodeCompactionMarker("s", (*parsed)["encrypted_content"].get<std::string>());
  Check(again.ok() && *again == *carry, "a block's marker does not give its carry back");
}

void Prepend(std::string_view answer) {
  using namespace harness;
  const std::string block = serve::CompactionBlockJson("s", serve::CompactionCarry{});
  auto out = serve::PrependCompactionBlock(answer, block);
  if (!out.ok()) {
    Check(out.error().type == "api_error", "a bad upstream answer is not an api_error");
    return;
  }
  auto parsed = ParseStrictJson(*out);
  Check(parsed.ok() && (*parsed)["content"][0] == *ParseStrictJson(block),
        "the block is not the answer's first");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0]) {
    case 0:
      Request(rest, false);
      break;
    case 5:
      Request(rest, true);
      break;
    case 1:
      Marker(rest);
      break;
    case 2:
      Stream(rest);
      break;
    case 3:
      Replacement(rest);
      break;
    default:
      Prepend(rest);
      break;
  }
  return 0;
}

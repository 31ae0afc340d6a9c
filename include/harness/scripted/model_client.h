// ScriptedModelClient: a test double that answers from a script of steps, in order
// (the `scripted:PATH` compactor of the CLI, and the model of turns in tests). docs/scripted.md.
//
// Script: a JSON array (strict JSON, core/json.h) of step objects. Exactly one of:
//   {"summary": "<xml>"}   an envelope (compaction/wire.h EncodeSummaryEnvelope) that echoes
//                          the identity (basis, model, request fingerprint) of the compaction
//                          input found in the request's last user message (its first text
//                          block must be the input wire; a model compactor may add the
//                          anchors after it), with this summary verbatim.
//                          A request without a decodable compaction input fails the step with
//                          InferenceError{kInvalidResponse}.
//   {"raw": "<text>"}      one text block with this text, verbatim.
//   {"message": {…}}       this assistant message (content codec, role "assistant"): how a
//                          script asks for tool calls. Stop reason kToolUse when it holds a
//                          tool_use block, else kEndTurn.
//   {"error": "<kind>"}    the call fails with InferenceError of that kind ("timeout",
//                          "transport", "refused", "rate_limited", "invalid_response";
//                          "canceled" is the caller's stop token's, not a script's).
// Optional members of every step:
//   "usage": {"output_tokens": n}   the reported output_tokens (0 allowed); by default a
//                                   positive count consistent with the text: max(1,
//                                   ceil(bytes / 4)) of the answer's text blocks (for a summary,
//                                   the whole envelope). A message that carries its own usage
//                                   keeps it; "usage" then replaces its output_tokens only.
//   "delay_ms": n                   wait n ms (0..600000) before answering; the stop token cuts
//                                   the wait short with kCanceled.
//   "stop": "max_tokens"            report the answer as cut off (summary/raw/message only).
//   "stream": {"bytes": n,          give the answer's text (every text block, in order) to the
//              "gap_ms": m}         client's TextDeltaSink in pieces of at most n bytes (1..2^20;
//                                   a piece is never less than one whole UTF-8 character), the
//                                   stop token checked before each piece, waiting m ms
//                                   (0..600000, default 0) between pieces; the stop token cuts
//                                   a wait short with kCanceled. Without it, no text is given
//                                   to the sink (not on an error step).
// Any other member, a second kind, a wrong type or an empty array is a ScriptError whose path
// names the offending value ("$[2].usage.output_tokens"); never a crash. Calls beyond the last
// step fail with InferenceError{kTransport, "script exhausted"}.
// Every call takes the next step, even one that ends canceled: a stop requested before or during
// the step's delay fails the call with kCanceled (exhausted scripts still say "exhausted").
// Thread safety: Complete may be called from several threads; steps are handed out in call
// order under a lock (the delay and the answer happen outside it). Every request is recorded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/content/message.h"
#include "harness/core/result.h"
#include "harness/inference/client.h"

namespace harness {

struct ScriptError {
  std::string path;    // "$[2].usage"
  std::string detail;  // what is wrong; never quotes the script beyond a few bytes
  std::string Message() const;
};

// How a step's answer text is streamed to the client's TextDeltaSink.
struct ScriptStream {
  std::size_t bytes = 1;  // the largest piece, except a single wider UTF-8 character
  std::uint32_t gap_ms = 0;
};

struct ScriptStep {
  enum class Kind : std::uint8_t { kSummary, kRaw, kMessage, kError };
  Kind kind = Kind::kRaw;
  std::string text;                                           // summary xml or raw text
  std::optional<AssistantMessage> message;                    // kMessage
  InferenceErrorKind error = InferenceErrorKind::kTransport;  // kError
  std::optional<TokenCount> output_tokens;
  std::uint32_t delay_ms = 0;
  bool max_tokens = false;
  std::optional<ScriptStream> stream;
};

Result<std::vector<ScriptStep>, ScriptError> ParseScript(std::string_view json);

class ScriptedModelClient final : public ModelClient {
 public:
  // `on_text` receives the text of the steps that stream (may be empty).
  explicit ScriptedModelClient(std::vector<ScriptStep> steps, TextDeltaSink on_text = {});
  static Result<std::unique_ptr<ScriptedModelClient>, ScriptError> FromJson(
      std::string_view json, TextDeltaSink on_text = {});

  Result<InferenceResponse, InferenceError> Complete(const InferenceRequest& request,
                                                     std::stop_token stop) override;

  std::size_t calls() const;                       // Complete calls so far
  std::vector<InferenceRequest> requests() const;  // every request received, in order

 private:
  const TextDeltaSink on_text_;
  mutable std::mutex mutex_;
  std::vector<ScriptStep> steps_;
  std::size_t next_ = 0;
  std::vector<InferenceRequest> requests_;
};

}  // namespace harness

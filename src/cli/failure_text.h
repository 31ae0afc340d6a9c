// What the CLI says when a model or a compactor fails: the cause the runtime journaled, and a
// hint a person can act on (docs/cli.md, "When the model fails").
//
// - ModelFailureHint(provider, failure): `failure` is an InferenceError as the runtime
//   journals it, "<kind>[: <detail>]" (inference/request.h; a TurnFailed's detail, or a
//   compactor_failed note after its "model "). The hint names the provider's variables for
//   "openai" and "anthropic" (OPENAI_API_KEY, OPENAI_BASE_URL; ANTHROPIC_…):
//     refused                     "check OPENAI_API_KEY (is it set, current, allowed this model?)"
//     invalid_request, HTTP 404   "is the base URL right (OPENAI_BASE_URL), and the model name?"
//     invalid_request, other      "the provider refused the request; its type and code say why"
//     rate_limited                "wait and try again, or check the account's rate limits"
//     timeout                     "the server did not answer in time; is it up, and the base URL
//     right?" transport, script exhausted "the script has no step left for this call; add one"
//     transport, other            "is the base URL right (OPENAI_BASE_URL), and the server up?"
//     invalid_response            "the server's answer is not the provider's wire; is the base URL
//     …"
//   "" for anything else (a canceled call, a script's error step: "refused: scripted").
// - TurnFailedText(failed): "<reason>[: <detail>]", then the measurement it carries:
//   " (<input tokens>/<input limit> tokens)" or " (<made>/<limit> model calls)".
// - TurnFailureLine(failed, provider): "turn failed: " and TurnFailedText, then "; <hint>" for a
//   model_error with a hint.
// - CompactorFailureHint(detail, provider): the hint of a compactor_failed rejection detail
//   whose note is a model's failure ("model <kind>: …"), else "".
// The texts may hold a server's words: callers show them through TerminalText.
// Proof: src/cli/failure_text_test.cc, tests/e2e/chat_cli_test.cc
// (AWrongKeyShowsTheProvidersCauseAndAHint,
// AnExhaustedScriptAndAnUnusableAnswerAreDistinctFailures), tests/e2e/compact_cli_test.cc
// (AModelCompactorThatIsRefusedSaysWhyAndJournalsIt).
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "harness/compaction/reject_detail.h"
#include "harness/event/lifecycle.h"

namespace harness::cli {

std::string ModelFailureHint(std::string_view provider, std::string_view failure);
std::string TurnFailedText(const TurnFailed& failed);
std::string TurnFailureLine(const TurnFailed& failed, std::string_view provider);
std::string CompactorFailureHint(const std::optional<CompactRejectDetail>& detail,
                                 std::string_view provider);

}  // namespace harness::cli

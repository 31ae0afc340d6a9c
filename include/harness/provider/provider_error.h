// ClassifyProviderFailure: a model provider's error answer as a typed InferenceError, for both
// the OpenAI-compatible Chat Completions wire and the Anthropic Messages wire.
//
// Contract:
// - The HTTP status decides the kind: 401, 403 -> kRefused; 429 and 529 (Anthropic's
//   "overloaded") -> kRateLimited; 408, 504 -> kTimeout; 400, 404, 413, 422 -> kInvalidRequest;
//   every other 5xx -> kTransport. Any other status (a 2xx without a usable answer, 402, 409, …)
//   takes the kind of the body's error type as ClassifyProviderError gives it, else kTransport.
// - ClassifyProviderError (internal to the wires, src/provider/wire_json.h) reads an error
//   object found inside a 200 answer or a stream (both wires: {"error":{"type":…,"code":…}}
//   and Anthropic's {"type":"error","error":{"type":…}}):
//   authentication_error, permission_error -> kRefused; rate_limit_error, overloaded_error ->
//   kRateLimited; invalid_request_error, not_found_error, request_too_large -> kInvalidRequest;
//   timeout_error -> kTimeout; any other type, or none -> kTransport.
// - The detail is "HTTP <status>" (ClassifyProviderFailure only) followed by the provider's error
//   type and code when the body has them and they look like identifiers (at most 64 characters
//   of [A-Za-z0-9_.-]). For 401, 403, 404 and 429 (a key, a base URL, a model name, a plan:
//   what the caller can fix) ClassifyProviderFailure adds ": " and the error's message, made one
//   line (OneLineText, core/one_line_text.h) of at most 200 bytes ("…" when cut), with `secrets`
//   redacted (a cut never leaves a credential's beginning). Any other status, and
//   ClassifyProviderError, never include the message: providers quote the request in it. A body
//   that is not JSON, or any other shape, only loses the type, code and message.
//   A type or code can be a key too, so callers redact the configured credentials from the
//   whole detail as well (the provider clients do, provider_transport.h).
// Thread safety: pure functions.
#pragma once

#include <string_view>

#include "harness/http/secrets.h"
#include "harness/inference/request.h"

namespace harness {

InferenceError ClassifyProviderFailure(int http_status, std::string_view body,
                                       const Secrets& secrets = Secrets());

}  // namespace harness

// AnthropicTokenCounter: a ContextCounter of quality ExactProvider over Anthropic's
// POST <base_url>/messages/count_tokens.
//
// Contract (beyond inference/counter.h):
// - The body is EncodeAnthropicCountTokensRequest's; the headers those of AnthropicClient. The
//   count is the answer's input_tokens, returned with the request's model key and quality
//   kExactProvider.
// - Failures: a stop request -> kCanceled; a timeout -> kTimeout; a request without a wire form,
//   an error answer (after the connection's retries) or an answer that is not a count ->
//   kFailed with a detail that never holds the key, the request or the answer.
// Thread safety: Count may be called concurrently.
#pragma once

#include <memory>

#include "harness/http/client.h"
#include "harness/inference/counter.h"
#include "harness/provider/connection.h"

namespace harness {

namespace provider_internal {
class ProviderTransport;
}

class AnthropicTokenCounter final : public ContextCounter {
 public:
  // `http` must not be null.
  AnthropicTokenCounter(std::shared_ptr<HttpClient> http, ProviderConnection connection);
  ~AnthropicTokenCounter() override;

  CountQuality quality() const override { return CountQuality::kExactProvider; }
  Result<ContextCount, CountError> Count(const InferenceRequest& request,
                                         std::stop_token stop) override;

 private:
  std::unique_ptr<provider_internal::ProviderTransport> transport_;
};

}  // namespace harness
